// Compaction: when a stored conversation nears the model's context window, the older
// turns are replaced by a summary written by the model, so the session can go on. The
// full conversation stays in the store (and in the workflow's transcript); the model gets
// a new chain: the summary, then the newest turns unchanged. Cuts fall only where a turn
// begins (a user message without tool results), so the result is a valid request.
//
// The summary is asked for as a continuation of the turn's own request (`summaryRequest`):
// the same model, system, tools, thinking and tool_choice, the whole conversation with its
// cache breakpoints, and one more text block asking for a summary of the messages before
// the cut. Everything the previous call wrote to the prompt cache is read back at 0.1× the
// input price; a request of its own (another system prompt, the transcript as text) would
// pay the whole conversation again at 1× (a change of system, tools, thinking or
// tool_choice invalidates the cached messages). Only a conversation that no longer fits the
// window (`compactNow`, after "prompt is too long") is summarized from its transcript.
import type Anthropic from '@anthropic-ai/sdk';
import { appendSegment, type StoreKeys, type StoreTarget } from './conversation-store';

export const SUMMARY_SYSTEM_PROMPT =
  'Summarize the conversation below for the assistant who will continue it. Keep every fact, ' +
  'decision, file name, command and open question the assistant needs; drop pleasantries. ' +
  'Write plain prose, at most a few paragraphs.';

/** Words the summary instruction always carries (scenarios and the bench find the summary call by them). */
export const COMPACTION_MARK = 'the conversation is being compacted';

/** The request asking for the summary at the end of the conversation itself: what to summarize, counted as the API counts messages. */
export function summaryInstruction(messages: readonly Anthropic.MessageParam[], cut: number): string {
  const next = messages[cut];
  const opening = next === undefined ? '' : transcriptText([next]).replace(/^USER:\n/, '').slice(0, 160);
  return (
    `(Keel, not the user: ${COMPACTION_MARK} to fit the context window.) Summarize the first ${cut} ` +
    `messages of this conversation — everything before message ${cut + 1}, the user's message that begins ` +
    `${JSON.stringify(opening)} — for the assistant who will continue it. Keep every fact, decision, file name, ` +
    'command and open question the assistant needs; drop pleasantries. Answer with the summary only, in plain prose ' +
    'of at most a few paragraphs, and call no tools.'
  );
}

/**
 * The summary call as a continuation of the turn's request `body` (its breakpoints
 * included): the same fields, not streamed, and the instruction as a last text block —
 * after the tool results of a final user message (they must come first), or as a user
 * message of its own after a final assistant message (a `pause_turn` continuation).
 */
export function summaryRequest(body: Anthropic.MessageCreateParamsStreaming, cut: number): Anthropic.MessageCreateParamsNonStreaming {
  const ask: Anthropic.TextBlockParam = { type: 'text', text: summaryInstruction(body.messages, cut) };
  const last = body.messages.at(-1);
  const messages: Anthropic.MessageParam[] =
    last === undefined || last.role !== 'user'
      ? [...body.messages, { role: 'user', content: [ask] }]
      : [...body.messages.slice(0, -1), { role: 'user', content: [...(typeof last.content === 'string' ? [{ type: 'text' as const, text: last.content }] : last.content), ask] }];
  return { ...body, messages, stream: false };
}

/** The summary call of a conversation too long to continue: its older part as a transcript, under a system prompt of its own (nothing read from cache). */
export function transcriptSummaryRequest(model: string, messages: readonly Anthropic.MessageParam[], cut: number): Anthropic.MessageCreateParamsNonStreaming {
  return { model, max_tokens: 2048, system: SUMMARY_SYSTEM_PROMPT, messages: [{ role: 'user', content: transcriptText(messages.slice(0, cut)) }] };
}

export interface SummaryUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
}

export interface Compaction {
  /** Messages the model saw before and after. */
  fromMessages: number;
  toMessages: number;
  /** Estimated tokens before and after. */
  fromTokens: number;
  toTokens: number;
  summaryChars: number;
  /** What the summary call was billed for: all its input tokens (cached included), output, and its price (null: unknown). */
  usage: { input_tokens: number; output_tokens: number };
  /** Of its input tokens, those read from the prompt cache (the conversation the turn had sent before). */
  cacheReadTokens?: number;
  costUsd: number | null;
}

/** A rough count (4 characters a token): enough to decide when to compact. */
export function estimateTokens(messages: readonly Anthropic.MessageParam[]): number {
  return Math.ceil(JSON.stringify(messages).length / 4);
}

const startsTurn = (m: Anthropic.MessageParam): boolean =>
  m.role === 'user' && (typeof m.content === 'string' || !m.content.some((b) => b.type === 'tool_result'));

/** Where the kept tail begins: the earliest turn start whose tail fits in `keepTokens`, but never the first message. */
export function cutPoint(messages: readonly Anthropic.MessageParam[], keepTokens: number): number | null {
  let best: number | null = null;
  for (let i = messages.length - 1; i > 0; i--) {
    const message = messages[i];
    if (message === undefined || !startsTurn(message)) continue;
    if (best !== null && estimateTokens(messages.slice(i)) > keepTokens) break;
    best = i;
  }
  return best;
}

function transcriptText(messages: readonly Anthropic.MessageParam[]): string {
  return messages
    .map((m) => {
      const parts = typeof m.content === 'string' ? [m.content] : m.content.map((b) => blockText(b));
      return `${m.role.toUpperCase()}:\n${parts.filter(Boolean).join('\n')}`;
    })
    .join('\n\n');
}

/** Text, tool calls and tool results carry the conversation; thinking and media do not go into the summary. */
function blockText(block: Anthropic.ContentBlockParam): string {
  if (block.type === 'text') return block.text;
  if (block.type === 'tool_use') return `[called ${block.name} ${JSON.stringify(block.input)}]`;
  if (block.type === 'tool_result') {
    const content = typeof block.content === 'string' ? block.content : (block.content ?? []).map((c) => (c.type === 'text' ? c.text : '')).join('\n');
    return `[tool result${block.is_error ? ' (error)' : ''}: ${content}]`;
  }
  return '';
}

/**
 * Compacts `messages` when they exceed `aboveTokens`: summarizes everything before the cut
 * with `summarize`, stores the new chain in `dir`, and returns it with its head.
 */
export async function compactConversation(
  dir: StoreTarget,
  messages: Anthropic.MessageParam[],
  aboveTokens: number,
  /** Writes the summary of `messages.slice(0, cut)`. */
  summarize: (cut: number) => Promise<{ text: string; usage: SummaryUsage; costUsd?: number | null }>,
  keys: StoreKeys = null,
  /** The conversation's size as the API measured it (the last response's input tokens and an estimate of what came since); estimated when absent. */
  measuredTokens?: number,
): Promise<{ messages: Anthropic.MessageParam[]; head: string | null; compaction: Compaction } | null> {
  const fromTokens = measuredTokens ?? estimateTokens(messages);
  if (fromTokens <= aboveTokens) return null;
  const cut = cutPoint(messages, Math.floor(aboveTokens / 2));
  if (cut === null) return null;
  const summary = await summarize(cut);
  const [first, ...rest] = messages.slice(cut);
  if (first === undefined) return null;
  const intro: Anthropic.TextBlockParam = { type: 'text', text: `(Summary of the earlier conversation, compacted to fit the context window)\n${summary.text}` };
  const firstContent: Anthropic.ContentBlockParam[] = typeof first.content === 'string' ? [{ type: 'text', text: first.content }] : first.content;
  const compacted: Anthropic.MessageParam[] = [{ role: 'user', content: [intro, ...firstContent] }, ...rest];
  const head = await appendSegment(dir, null, compacted, keys);
  return {
    messages: compacted,
    head,
    compaction: {
      fromMessages: messages.length,
      toMessages: compacted.length,
      fromTokens,
      toTokens: estimateTokens(compacted),
      summaryChars: summary.text.length,
      usage: {
        input_tokens: summary.usage.input_tokens + (summary.usage.cache_creation_input_tokens ?? 0) + (summary.usage.cache_read_input_tokens ?? 0),
        output_tokens: summary.usage.output_tokens,
      },
      cacheReadTokens: summary.usage.cache_read_input_tokens ?? 0,
      costUsd: summary.costUsd ?? null,
    },
  };
}
