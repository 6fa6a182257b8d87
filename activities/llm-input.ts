// What a model call takes and returns. The conversation is a tagged union: `inline`
// messages for one-off calls, or a `ref` to the conversation store
// (activities/conversation-store.ts) plus the messages added since, for sessions: inline
// messages in every activity input would make workflow history grow with the square of
// the conversation.
import type Anthropic from '@anthropic-ai/sdk';
import { Context } from '@temporalio/activity';
import { z } from 'zod';
import { callBudgetSchema, type CallBudget } from '../machines/call-ceiling';
import type { Compaction } from './conversation-compaction';
import { appendSegment, checkStoreIdentity, readConversation, storeFor, storeKeys, type StoreKeys } from './conversation-store';
import type { ObjectStore } from './store/interface';
import { resolveStoredOutputs } from './stored-outputs';
import { type WarmConversations, warmConversations } from './warm-conversations';
import type { MessageBytes } from './request-bytes';
import type { CutToolUse } from './llm-accumulate';
import type { ModelStreamEvent } from '../shared/model-stream';
import type { SpentUsage } from './llm-errors';
import type { ModelCost } from './llm-pricing';

export type ModelConversation =
  | { kind: 'inline'; messages: Anthropic.MessageParam[] }
  | {
      kind: 'ref';
      /** The store directory (the worker's KEEL_STORE_URL or KEEL_STORE_DIR overrides it). */
      store: string;
      /** The identity of the store the session started on: a worker whose store has another refuses the call. */
      storeId?: string;
      /** The stored conversation so far (a segment id), or null when nothing is stored yet. */
      head: string | null;
      /** Messages after `head`, stored by the activity before the call (idempotently). */
      append: Anthropic.MessageParam[];
      /** Above this many (estimated) tokens, older turns are summarized first (conversation-compaction.ts). */
      compactAboveTokens?: number;
      /** Compact before this call whatever the size: the last request exceeded the context window. */
      compactNow?: boolean;
      /** Input tokens of the last response for `head` (all of them, cached included): the measure proactive compaction starts from. */
      lastInputTokens?: number;
    };

export interface ModelCallInput {
  /** Correlates stream events and logs with the caller's turn; optional. */
  callId?: string;
  model: string;
  maxTokens: number;
  system?: string | Anthropic.TextBlockParam[];
  tools?: Anthropic.ToolUnion[];
  /** The tool definitions stored once in the conversation store (a segment of tools); `tools` beside it are added after them (a turn's client tools). */
  toolsRef?: { store: string; id: string };
  toolChoice?: Anthropic.ToolChoice;
  thinking?: Anthropic.ThinkingConfigParam;
  temperature?: number;
  stopSequences?: string[];
  conversation: ModelConversation;
  /** Cache breakpoints on tools + system, the previous call's tail and the conversation's last block (default true; activities/llm-cache.ts). */
  promptCaching?: boolean;
  /** `false` for a one-shot call whose conversation is never sent again (the planner, the critic): tools and system are cached, not the prompt. */
  cacheConversation?: boolean;
  /** How long the cache entries live: `1h` for sessions that wait on people longer than 5 minutes (writes cost 2× instead of 1.25×). */
  promptCacheTtl?: '5m' | '1h';
  /** With `thinking.type: 'enabled'`: think between tool calls too (the interleaved-thinking beta header). */
  interleavedThinking?: boolean;
  /** Publish deltas to the calling workflow's stream (default true). */
  publish?: boolean;
  /**
   * `timeouts_only`: every failure is marked non-retryable (its real retryability is in
   * `details[0].retryable`), so Temporal retries the activity only when an attempt is lost
   * (heartbeat timeout, a dead worker) — fast, on the server — and the caller retries the
   * rest by its own table. The turn runner uses this.
   */
  serverRetries?: 'timeouts_only';
  /** What the call may still spend: it is shrunk to fit its worst case, or not sent (machines/call-ceiling.ts). */
  budget?: CallBudget;
}

export interface ModelCallResult {
  /** As the API sent it: content blocks untouched, thinking signatures included. */
  message: Anthropic.Message;
  /** `max_tokens`, `pause_turn` and `refusal` are results for the caller to act on, not errors. */
  stopReason: Anthropic.StopReason | null;
  usage: Anthropic.Usage;
  requestId: string | null;
  model: string;
  /** `null` when the model is not in the price table: unknown, not free. */
  cost: ModelCost | null;
  attempt: number;
  /** For a `ref` conversation: the head that includes `append` (pass it to the next call). */
  conversationHead?: string | null;
  /** Set when the conversation was compacted before this call (the head is then the compacted chain). */
  compaction?: Compaction;
  /** A tool_use cut by max_tokens (left out of `message.content`): the turn decides, never a blind retry. */
  cutToolUse?: CutToolUse;
  /** What an earlier attempt lost with its worker had been billed for (from its last heartbeat; estimated). */
  lostAttemptUsage?: SpentUsage;
  /**
   * The live stream's end not signalled to the workflow (activities/llm-deltas.ts): the caller
   * appends it to its `model` topic when it takes this result. Absent when the call did not stream.
   */
  streamTail?: ModelStreamEvent[];
}

const block = z.looseObject({ type: z.string() });
const messageSchema = z.looseObject({
  role: z.enum(['user', 'assistant']),
  content: z.union([z.string(), z.array(block)]),
});

const conversationSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('inline'), messages: z.array(messageSchema).min(1) }),
  z.object({
    kind: z.literal('ref'),
    store: z.string().min(1),
    storeId: z.string().min(1).max(200).optional(),
    head: z.string().regex(/^[0-9a-f]{64}$/).nullable(),
    append: z.array(messageSchema),
    compactAboveTokens: z.number().int().positive().optional(),
    compactNow: z.boolean().optional(),
    lastInputTokens: z.number().int().min(0).optional(),
  }),
]);

// The API validates the fine structure; this catches what would waste a paid call or
// point at a bug in the caller, before any request is sent.
export const modelCallInputSchema = z.object({
  callId: z.string().min(1).optional(),
  model: z.string().min(1),
  maxTokens: z.number().int().positive(),
  system: z.union([z.string(), z.array(block)]).optional(),
  tools: z.array(z.looseObject({ name: z.string().min(1) })).optional(),
  toolsRef: z.object({ store: z.string().min(1), id: z.string().regex(/^[0-9a-f]{64}$/) }).optional(),
  toolChoice: block.optional(),
  thinking: block.optional(),
  temperature: z.number().min(0).max(1).optional(),
  stopSequences: z.array(z.string()).optional(),
  conversation: conversationSchema,
  promptCaching: z.boolean().optional(),
  promptCacheTtl: z.enum(['5m', '1h']).optional(),
  cacheConversation: z.boolean().optional(),
  interleavedThinking: z.boolean().optional(),
  publish: z.boolean().optional(),
  serverRetries: z.literal('timeouts_only').optional(),
  budget: callBudgetSchema.optional(),
});

/** The session a call belongs to, for its warm conversation on this worker (activities/warm-conversations.ts). */
export interface WarmKey {
  session: string;
  cache?: WarmConversations;
}

/**
 * The messages to send, wherever the conversation lives; a `ref` is stored first. With a
 * `warm` key, a session whose previous call ended on this worker at the call's parent head
 * takes the messages it had then and adds the new ones; otherwise they are read from the store.
 */
export async function messagesOf(
  conversation: ModelConversation,
  env: NodeJS.ProcessEnv = process.env,
  warm?: WarmKey,
): Promise<{ messages: Anthropic.MessageParam[]; head: string | null | undefined; store?: ObjectStore; keys?: StoreKeys; warm?: boolean }> {
  switch (conversation.kind) {
    case 'inline':
      return { messages: conversation.messages, head: undefined };
    case 'ref': {
      const store = storeFor(conversation.store, env);
      await checkStoreIdentity(store, conversation.storeId);
      const keys = await storeKeys(env);
      const head = await appendSegment(store, conversation.head, conversation.append, keys);
      const cache = warm?.cache ?? warmConversations;
      const where = `${store.kind}\0${store.where}`;
      const base = warm === undefined ? undefined : cache.get(warm.session, where, conversation.head);
      if (warm !== undefined && base !== undefined) {
        const added = await resolveStoredOutputs(conversation.append, store, keys);
        const messages = base.concat(added);
        cache.set(warm.session, where, head, messages, added, base);
        return { messages, head, store, keys, warm: true };
      }
      // Large tool results are stored once, apart (activities/stored-outputs.ts): their text goes back in here.
      const messages = await resolveStoredOutputs(await readConversation<Anthropic.MessageParam>(store, head, keys), store, keys);
      if (warm !== undefined) cache.set(warm.session, where, head, messages);
      return { messages, head, store, keys, warm: false };
    }
  }
}

/**
 * Another activity stored the session's pending messages (a turn's checkpoint does): a warm
 * conversation at `parent` moves on to `head` with them, so the next model call still finds it.
 */
export async function extendWarm(warm: WarmKey | undefined, store: ObjectStore, parent: string | null, head: string | null, append: readonly Anthropic.MessageParam[], keys: StoreKeys): Promise<void> {
  if (warm === undefined || head === parent) return;
  const cache = warm.cache ?? warmConversations;
  const where = `${store.kind}\0${store.where}`;
  const base = cache.get(warm.session, where, parent);
  if (base === undefined) return;
  const added = await resolveStoredOutputs(append, store, keys);
  cache.set(warm.session, where, head, base.concat(added), added, base);
}

/** The session of the activity running now (undefined outside an activity or a workflow's). */
export function warmKeyHere(): WarmKey | undefined {
  try {
    const execution = Context.current().info.workflowExecution;
    return execution !== undefined ? { session: `${execution.workflowId}/${execution.runId}` } : undefined;
  } catch {
    return undefined;
  }
}

/** The JSON bytes a warm conversation keeps for `messages` (activities/request-bytes.ts), if any. */
export function keptBytes(warm: WarmKey | undefined, messages: readonly Anthropic.MessageParam[]): MessageBytes | undefined {
  return warm === undefined ? undefined : (warm.cache ?? warmConversations).encoded(warm.session, messages);
}

/** After a compaction: the session's warm conversation is the compacted one. */
export function rememberCompacted(warm: WarmKey | undefined, store: ObjectStore, head: string | null, messages: readonly Anthropic.MessageParam[]): void {
  if (warm !== undefined) (warm.cache ?? warmConversations).set(warm.session, `${store.kind}\0${store.where}`, head, messages);
}

/** The tool definitions to send: inline, or read from the store. */
export async function toolsOf(input: ModelCallInput, env: NodeJS.ProcessEnv = process.env): Promise<Anthropic.ToolUnion[] | undefined> {
  if (input.toolsRef === undefined) return input.tools;
  const stored = await readConversation<Anthropic.ToolUnion>(storeFor(input.toolsRef.store, env), input.toolsRef.id, await storeKeys(env));
  // `tools` beside a reference: the turn's client tools (workflows/client-tools.ts), after the stored ones.
  return input.tools?.length ? [...stored, ...input.tools] : stored;
}
