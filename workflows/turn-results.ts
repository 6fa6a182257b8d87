// What the turn runner hears from its activities, translated into the turn machine's
// events: a model answer (its content and every billed token, a compaction's and a lost
// attempt's included), a failed model call (retryable or not, its row of the retry table,
// what it was billed for), a tool's result or failure, and what an interrupted call had
// been billed for, from its stream. Pure functions of their input: unit-tested in
// test/unit/turn-results.test.ts.
import { ActivityFailure, ApplicationFailure, CancelledFailure, TimeoutFailure } from '@temporalio/workflow';
import type { ModelCallResult, ModelStreamEvent } from '../activities/llm';
import type { ToolResult } from '../activities/tools/index';
import type { CallUsage, ContentBlock, Json, ToolCallEvent, TurnEvent } from '../machines/index';
import { type CallFailure, storeFault } from '../machines/conversation-repair';
import { MODEL_FAILURE_CLASSES, type ModelFailureClass } from '../machines/model-retry';
import { interruptedToolResult, WORKER_SHUTDOWN_FAILURE, type ToolFacts } from '../machines/tool-result';
import { storedOutputSchema } from '../machines/stored-output';

/** A failed call's type, message and first detail, for the rules that decide on them (machines/conversation-repair.ts); null for a failure that is not an application failure. */
export function callFailureOf(error: unknown): CallFailure | null {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  if (!(cause instanceof ApplicationFailure)) return null;
  return { type: cause.type ?? null, message: cause.message, details: cause.details?.[0] };
}

/** A model call that failed because the store could not be reached or was busy (waited out): its store and message; else null. */
export function transientStoreFailure(error: unknown): { store: string; message: string } | null {
  return storeFault(callFailureOf(error))?.transient ?? null;
}

/** A tool activity stopped by its worker's shutdown (not by the tool). */
export function stoppedByShutdown(error: unknown): boolean {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  return cause instanceof ApplicationFailure && cause.type === WORKER_SHUTDOWN_FAILURE;
}

export function toContent(blocks: ModelCallResult['message']['content']): ContentBlock[] {
  const out: ContentBlock[] = [];
  for (const block of blocks) {
    // An empty text block (the model may send one before a tool_use) would make every later request a 400.
    if (block.type === 'text' && block.text !== '') out.push({ type: 'text', text: block.text });
    else if (block.type === 'tool_use') out.push({ type: 'tool_use', id: block.id, name: block.name, input: block.input as Json });
    else if (block.type === 'thinking') out.push({ type: 'thinking', thinking: block.thinking, signature: block.signature });
    else if (block.type === 'redacted_thinking') out.push({ type: 'redacted_thinking', data: block.data });
    // Server tools' calls and results go back as they came (a pause_turn continues from them).
    else if (block.type === 'server_tool_use' || block.type === 'web_search_tool_result' || block.type === 'web_fetch_tool_result') out.push(block as unknown as ContentBlock);
  }
  return out;
}

/** A model answer as the turn sees it: its content (no empty text blocks) and everything it was billed for. */
export function modelResponse(result: ModelCallResult): Extract<TurnEvent, { type: 'model_response' }> {
  const u = result.usage;
  // A compaction's summary call is part of this step's spending.
  const summary = result.compaction?.usage ?? { input_tokens: 0, output_tokens: 0 };
  const details = (result.message as { stop_details?: { category?: unknown; explanation?: unknown } | null }).stop_details;
  const lost = spentUsage(result.lostAttemptUsage, true);
  const text = (v: unknown): string | null => (typeof v === 'string' ? v : null);
  return {
    type: 'model_response',
    content: toContent(result.message.content),
    stopReason: result.stopReason,
    ...(result.cutToolUse !== undefined ? { cutToolUse: { id: result.cutToolUse.id, name: result.cutToolUse.name } } : {}),
    ...(result.stopReason === 'refusal' ? { refusal: { category: text(details?.category), explanation: text(details?.explanation) } } : {}),
    usage: {
      inputTokens: u.input_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0) + summary.input_tokens + (lost?.inputTokens ?? 0),
      outputTokens: u.output_tokens + summary.output_tokens + (lost?.outputTokens ?? 0),
      costUsd:
        result.cost === null || (result.compaction !== undefined && result.compaction.costUsd === null)
          ? null
          : result.cost.total + (result.compaction?.costUsd ?? 0) + (lost === undefined ? 0 : (lost.costUsd ?? 0)),
      ...(lost !== undefined ? { estimated: true } : {}),
    },
  };
}

/** Usage an activity reported (failure details or heartbeat), checked: it is input from outside. */
export function spentUsage(raw: unknown, forceEstimated: boolean): CallUsage | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const u = raw as Record<string, unknown>;
  const count = (v: unknown): number | null => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : null);
  const inputTokens = count(u.inputTokens);
  const outputTokens = count(u.outputTokens);
  if (inputTokens === null || outputTokens === null) return undefined;
  const cost = typeof u.costUsd === 'number' && Number.isFinite(u.costUsd) && u.costUsd >= 0 ? u.costUsd : null;
  return { inputTokens, outputTokens, costUsd: cost, ...(forceEstimated || u.estimated === true ? { estimated: true } : {}) };
}

const FAILURE_CLASSES = new Set<string>(MODEL_FAILURE_CLASSES);

/** A failed model call as the turn sees it: retryable or not, when, and what it was billed for. */
export function modelFailure(error: unknown): Extract<TurnEvent, { type: 'model_failed' }> {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  if (cause instanceof ApplicationFailure) {
    const details = cause.details?.[0] as { retryAfterMs?: unknown; failureClass?: unknown; usage?: unknown; retryable?: unknown; overBudget?: unknown } | undefined;
    const overBudget = overBudgetOf(details?.overBudget);
    const retryAfterMs = details?.retryAfterMs;
    const failureClass = typeof details?.failureClass === 'string' && FAILURE_CLASSES.has(details.failureClass) ? (details.failureClass as ModelFailureClass) : undefined;
    const usage = spentUsage(details?.usage, false);
    return {
      type: 'model_failed',
      message: `${cause.type ?? 'ModelError'}: ${cause.message}`,
      // With serverRetries 'timeouts_only' every failure is non-retryable for Temporal; the details say what it really is.
      retryable: typeof details?.retryable === 'boolean' ? details.retryable : cause.nonRetryable !== true,
      ...(typeof retryAfterMs === 'number' && retryAfterMs >= 0 ? { retryAfterMs: Math.round(retryAfterMs) } : {}),
      ...(failureClass !== undefined ? { failureClass } : {}),
      ...(usage !== undefined ? { usage } : {}),
      ...(overBudget !== undefined ? { overBudget } : {}),
    };
  }
  if (cause instanceof TimeoutFailure) {
    // A lost worker: what it had streamed is known from its last heartbeat (an estimate).
    const last = cause.lastHeartbeatDetails as { usage?: unknown } | undefined;
    const usage = spentUsage(last?.usage, true);
    return { type: 'model_failed', message: `the model call timed out (${cause.timeoutType})`, retryable: true, failureClass: 'transient', ...(usage !== undefined ? { usage } : {}) };
  }
  return { type: 'model_failed', message: cause instanceof Error ? cause.message : String(cause), retryable: true };
}

function overBudgetOf(raw: unknown): Extract<TurnEvent, { type: 'model_failed' }>['overBudget'] {
  const o = raw as { limit?: unknown; left?: unknown; needed?: unknown } | null | undefined;
  if (o === null || o === undefined || typeof o.left !== 'number' || typeof o.needed !== 'number') return undefined;
  if (o.limit !== 'input_tokens' && o.limit !== 'output_tokens' && o.limit !== 'cost_usd') return undefined;
  return { limit: o.limit, left: Math.max(0, o.left), needed: Math.max(0, o.needed) };
}

/** A tool activity that failed (not a tool that reported an error): timed out, lost with its worker, or failed. */
export function toolFailure(name: string, error: unknown): Extract<TurnEvent, { type: 'tool' }>['event'] {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  if (cause instanceof TimeoutFailure) {
    if (cause.timeoutType === 'HEARTBEAT') return { type: 'failed', error: interruptedToolResult(name, 'worker_lost').content };
    return { type: 'timed_out', message: interruptedToolResult(name, 'timed_out').content };
  }
  const detail = cause instanceof Error ? cause.message : String(cause);
  return { type: 'failed', error: interruptedToolResult(name, 'failed', detail).content };
}

/**
 * What one call had been billed for, from its events on the model stream (its latest
 * attempt): the input tokens `start` reported at message_start, and output estimated at
 * about 4 characters a token of the text and thinking streamed since. Marked estimated;
 * null when the call never reached message_start (nothing billed yet, as far as we know).
 */
export function streamedUsageOf(events: Iterable<ModelStreamEvent>, activityId: string): CallUsage | null {
  let attempt = -1;
  let start: Extract<ModelStreamEvent, { kind: 'start' }> | null = null;
  let chars = 0;
  for (const event of events) {
    if (event.callId !== activityId) continue;
    if (event.attempt !== attempt) {
      if (event.attempt < attempt) continue;
      attempt = event.attempt;
      start = null;
      chars = 0;
    }
    if (event.kind === 'start') start = event;
    else if (event.kind === 'delta') chars += event.text.length;
  }
  if (start === null || typeof start.inputTokens !== 'number') return null;
  const outputTokens = Math.ceil(chars / 4);
  const costUsd =
    typeof start.inputCostUsd === 'number' && typeof start.outputUsdPerToken === 'number' ? start.inputCostUsd + outputTokens * start.outputUsdPerToken : null;
  return { inputTokens: start.inputTokens, outputTokens, costUsd, estimated: true };
}

/**
 * What an interrupted model call was billed for beyond what its turn counted when it was
 * interrupted (`counted`, from the stream the workflow had then; null: nothing): the
 * activity read the stream until the connection closed and reports its whole usage in the
 * cancellation's details. Null when the cancellation says nothing, or nothing more.
 * A figure below what was counted is not taken back: a budget would rather count a token
 * too many than one too few.
 */
export function settledBeyond(error: unknown, counted: CallUsage | null): CallUsage | null {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  if (!(cause instanceof CancelledFailure)) return null;
  const settled = spentUsage(cause.details?.[0], false);
  if (settled === undefined) return null;
  const inputTokens = Math.max(0, settled.inputTokens - (counted?.inputTokens ?? 0));
  const outputTokens = Math.max(0, settled.outputTokens - (counted?.outputTokens ?? 0));
  const costUsd = settled.costUsd === null ? null : Math.max(0, settled.costUsd - (counted?.costUsd ?? 0));
  if (inputTokens === 0 && outputTokens === 0 && (costUsd ?? 0) === 0) return null;
  return { inputTokens, outputTokens, costUsd, ...(settled.estimated === true ? { estimated: true } : {}) };
}

/** A tool's result as the call's event: stopped at a sandbox limit (`limit`, when the runner's patch allows), timed out, failed or succeeded, with its checked facts. */
export function toolResultEvent(result: ToolResult, facts: ToolFacts | undefined, limit: boolean): ToolCallEvent {
  // A stored result's reference is checked like its facts (it comes from an activity): a bad one is dropped.
  const stored = result.stored !== undefined ? storedOutputSchema.safeParse(result.stored) : undefined;
  const f = { ...(facts !== undefined ? { facts } : {}), ...(stored?.success === true ? { stored: stored.data } : {}) };
  if (limit) return { type: 'limit_hit', message: result.content, ...f };
  if (result.timed_out) return { type: 'timed_out', message: result.content, ...f };
  if (result.is_error) return { type: 'failed', error: result.content, ...f };
  return { type: 'succeeded', output: result.content, ...f };
}
