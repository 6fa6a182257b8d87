// Prompt caching by design. A session resends its whole conversation on every model call,
// so what it pays is decided here. The API caches the prefix of a request (tools, then
// system, then messages, byte for byte) up to each `cache_control` breakpoint, looks back
// at most 20 blocks from a breakpoint for an earlier entry, allows 4 breakpoints, and
// caches nothing below a model's minimum length (machines/model-limits.ts). Keel places
// at most three, each for a reason:
//
// 1. The rolling breakpoint, on the last block of the last message: it writes the whole
//    request, so the next call — the same messages plus the model's answer and the tool
//    results — reads all of it. This is the one that caches the conversation.
// 2. The previous call's tail, on the last block of the message before the model's last
//    answer: the previous call wrote its rolling entry exactly there, so this call reads
//    it even when more than 20 blocks came after it (many parallel tool results, steering
//    messages) and the lookback from breakpoint 1 would miss it.
// 3. Tools and system, on the last system block (or the last tool without a system): it
//    survives what replaces the messages — a compaction's new chain, a new conversation
//    with the same agent (a retried planner, the critic's next review) — and costs
//    nothing while the conversation is read through breakpoint 1 or 2.
// 4. The tools alone, on the last tool, when a system prompt follows them and there is
//    room: conversations whose system prompts differ share the tools (a goal's task
//    agents, every session of one worker), so the first call of each reads them.
//
// A one-shot call (`conversation: false`: the goal's planner and critic, whose prompt is
// new each time) gets breakpoints 3 and 4 only: writing a prompt nobody reads again costs
// 1.25× instead of 1×.
//
// The placement is a pure function of the request, so the same conversation gets the
// same bytes after continue-as-new, on another worker, or in a retry. The stored
// conversation is never changed: breakpoints are added to copies. A caller who placed
// breakpoints keeps them, and Keel adds its own only up to the API's limit of 4.
//
// The SDK's top-level `cache_control` (automatic caching) places only breakpoint 1; Keel
// places the three itself so it can also read the previous tail and keep tools and system.
import type Anthropic from '@anthropic-ai/sdk';

export type CacheTtl = '5m' | '1h';

/** The API's limit on `cache_control` breakpoints in one request (the top-level one included). */
export const MAX_CACHE_BREAKPOINTS = 4;

type Cacheable = { cache_control?: Anthropic.CacheControlEphemeral | null };
type Block = Anthropic.ContentBlockParam;

const control = (ttl: CacheTtl): Anthropic.CacheControlEphemeral => (ttl === '1h' ? { type: 'ephemeral', ttl: '1h' } : { type: 'ephemeral' });

const marked = (item: unknown): boolean => typeof item === 'object' && item !== null && (item as Cacheable).cache_control != null;

/** Thinking blocks cannot carry a breakpoint, and an empty text block is refused anyway. */
function canCarry(block: Block): boolean {
  if (block.type === 'thinking' || block.type === 'redacted_thinking') return false;
  if (block.type === 'text') return block.text.length > 0;
  return true;
}

const blocksOf = (message: Anthropic.MessageParam): Block[] =>
  typeof message.content === 'string' ? (message.content.length > 0 ? [{ type: 'text', text: message.content }] : []) : message.content;

/** Index of the last block of `message` that can carry a breakpoint, or -1. */
function lastCarrier(message: Anthropic.MessageParam): number {
  return blocksOf(message).findLastIndex(canCarry);
}

function markMessage(message: Anthropic.MessageParam, ttl: CacheTtl): Anthropic.MessageParam {
  const blocks = blocksOf(message);
  const at = blocks.findLastIndex(canCarry);
  if (at < 0 || marked(blocks[at])) return message;
  return { ...message, content: blocks.map((b, i) => (i === at ? ({ ...b, cache_control: control(ttl) } as Block) : b)) } as Anthropic.MessageParam;
}

export interface CacheableRequest {
  system?: string | Anthropic.TextBlockParam[] | undefined;
  tools?: Anthropic.ToolUnion[] | undefined;
  messages?: Anthropic.MessageParam[] | undefined;
}

export interface CachedRequest {
  system?: Anthropic.TextBlockParam[];
  tools?: Anthropic.ToolUnion[];
  messages: Anthropic.MessageParam[];
}

/** The message indexes of breakpoints 1 and 2 (rolling, previous tail), when they can be placed. */
export function conversationBreakpoints(messages: readonly Anthropic.MessageParam[]): { rolling: number | null; tail: number | null } {
  const last = messages.length - 1;
  const rolling = last >= 0 && lastCarrier(messages[last]!) >= 0 ? last : null;
  // The message before the model's last answer ended the previous call.
  const answer = messages.findLastIndex((m, i) => m.role === 'assistant' && i > 0);
  let tail: number | null = null;
  if (answer > 0) {
    for (let i = answer - 1; i >= 0; i--) {
      if (lastCarrier(messages[i]!) >= 0) {
        tail = i;
        break;
      }
    }
  }
  return { rolling, tail: tail !== null && tail !== rolling ? tail : null };
}

export function withPromptCaching(request: CacheableRequest, options: { ttl?: CacheTtl; conversation?: boolean } = {}): CachedRequest {
  const ttl = options.ttl ?? '5m';
  let system: Anthropic.TextBlockParam[] | undefined =
    request.system === undefined ? undefined : typeof request.system === 'string' ? (request.system.length > 0 ? [{ type: 'text', text: request.system }] : []) : [...request.system];
  if (system !== undefined && system.length === 0) system = undefined;
  let tools = request.tools !== undefined && request.tools.length > 0 ? [...request.tools] : undefined;
  let messages = [...(request.messages ?? [])];

  const existing =
    (system ?? []).filter(marked).length +
    (tools ?? []).filter(marked).length +
    messages.reduce((n, m) => n + (typeof m.content === 'string' ? 0 : m.content.filter(marked).length), 0);
  let room = MAX_CACHE_BREAKPOINTS - existing;

  // In order of what they save: the conversation first, then the tail, then tools + system.
  const { rolling, tail } = options.conversation === false ? { rolling: null, tail: null } : conversationBreakpoints(messages);
  for (const index of [rolling, tail]) {
    if (index === null || room <= 0) continue;
    const before = messages[index]!;
    const after = markMessage(before, ttl);
    if (after !== before) {
      messages = messages.map((m, i) => (i === index ? after : m));
      room--;
    }
  }
  const prefixMarked = (system ?? []).some(marked) || (tools ?? []).some(marked);
  if (room > 0 && !prefixMarked) {
    const lastText = system?.findLastIndex((b) => b.text.length > 0) ?? -1;
    if (system !== undefined && lastText >= 0) {
      system = system.map((b, i) => (i === lastText ? { ...b, cache_control: control(ttl) } : b));
      room--;
      if (room > 0 && tools !== undefined) tools = tools.map((t, i) => (i === tools!.length - 1 ? ({ ...t, cache_control: control(ttl) }) : t));
    } else if (tools !== undefined) {
      tools = tools.map((t, i) => (i === tools!.length - 1 ? ({ ...t, cache_control: control(ttl) }) : t));
    }
  }
  return { ...(system !== undefined ? { system } : {}), ...(tools !== undefined ? { tools } : {}), messages };
}
