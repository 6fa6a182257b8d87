// One turn of the agent loop (ReAct): call the model, run the tools it asks for, call it
// again with their results, until it stops asking (seed 002 TurnEngine and Agent, 000
// Agent, 001, 004). The conversation stays out of the directives that start activities:
// the runner appends what `append_messages` gives it to its own store and passes the
// model activity a reference, so workflow history grows with each step's new messages
// only. Every `call_model` is preceded by appends that leave the stored conversation a
// valid Messages API request.
import { z } from 'zod';
import {
  addCallUsage,
  callUsageSchema,
  exhaustionSchema,
  findExhaustion,
  NO_LIMITS,
  turnLimitsSchema,
  usageSchema,
  ZERO_USAGE,
  type CallUsage,
  type Exhaustion,
  type TurnLimits,
  type Usage,
} from './budget';
import { contentBlockSchema, type ContentBlock, type Message } from './conversation';
import { assertNever, defineMachine, reject, type Step } from './core';
import { cancelActivity, cancelTimer, startTimer } from './directives';
import { emit, type ToolResultStatus } from './events';
import { finishTaskSchema, parseFinishTask, type FinishTask } from './task-outcome';
import { COMPLETE_REASONS, TURN_OUTCOMES, type CompleteReason } from './turn/outcome';
import { MAX_CALL_ATTEMPTS, modelFailureClassSchema, retryDecision } from './model-retry';
import {
  createToolCall,
  isTerminalCall,
  resultStatus,
  toolCallEventSchema,
  toolCallMachine,
  toolCallStateSchema,
  type ToolCallDirective,
  type ToolCallEvent,
  type ToolCallState,
} from './tool-call';

export const toolStatsSchema = z.strictObject({
  success: z.number().int().nonnegative(),
  error: z.number().int().nonnegative(),
  timeout: z.number().int().nonnegative(),
  // Runs from before this status existed carry no count: they had none.
  limit: z.number().int().nonnegative().default(0),
  cancelled: z.number().int().nonnegative(),
  denied: z.number().int().nonnegative(),
});
export type ToolStats = Record<ToolResultStatus, number>;
export const ZERO_TOOL_STATS: ToolStats = { success: 0, error: 0, timeout: 0, limit: 0, cancelled: 0, denied: 0 };

export const turnConfigSchema = z.strictObject({
  turnId: z.string().min(1),
  limits: turnLimitsSchema,
  /** Tools that only read: they may run in parallel within a step. */
  readOnlyTools: z.array(z.string()),
  /** The ask-the-human tool's name, answered by `answer` instead of an activity. */
  askTool: z.string().nullable(),
  /** A task agent's finish tool (machines/task-outcome.ts): recorded here, and the turn ends after its step. */
  finishTool: z.string().nullable().optional(),
  approvalTimeoutMs: z.number().int().positive().nullable(),
  maxParallelTools: z.number().int().positive(),
  /** A shorter backoff than the retry table's (tests); absent: the table's row (machines/model-retry.ts). */
  retryBackoffMs: z.array(z.number().int().nonnegative()).optional(),
  /** The output limit of a call, and the larger one a call cut inside a tool_use is retried with once (null: no larger one). */
  maxTokens: z.number().int().positive().nullable().optional(),
  raisedMaxTokens: z.number().int().positive().nullable().optional(),
});
export type TurnConfig = z.infer<typeof turnConfigSchema>;

const common = {
  config: turnConfigSchema,
  usage: usageSchema,
  /** Steer texts waiting for the next safe boundary. */
  steers: z.array(z.string()),
  toolStats: toolStatsSchema,
  /** Text of the model's latest answer: the turn's final output when it ends. */
  text: z.string().nullable(),
};
const step = z.number().int().nonnegative();
/** What this step already did once (each at most once a step): a larger limit, a compaction. */
const escalation = {
  raised: z.boolean().optional(),
  compacted: z.boolean().optional(),
  /** The call continues a paused answer (pause_turn): retries must send it the same way. */
  continuation: z.boolean().optional(),
};
const refusalSchema = z.strictObject({ category: z.string().nullable(), explanation: z.string().nullable() });

export const turnStateSchema = z.discriminatedUnion('status', [
  z.strictObject({ status: z.literal('idle'), ...common }),
  z.strictObject({ status: z.literal('calling_llm'), ...common, step, attempt: z.number().int().positive(), activityId: z.string(), ...escalation }),
  z.strictObject({
    status: z.literal('retry_wait'),
    ...common,
    step,
    attempt: z.number().int().positive(),
    timerId: z.string(),
    error: z.string(),
    ...escalation,
    /** The retry compacts first (context window). */
    compact: z.boolean().optional(),
  }),
  z.strictObject({ status: z.literal('executing_tools'), ...common, step, calls: z.array(toolCallStateSchema).min(1) }),
  z.strictObject({
    status: z.literal('completed'),
    ...common,
    step,
    reason: z.enum(COMPLETE_REASONS),
    stopReason: z.string().nullable(),
    exhaustion: exhaustionSchema.nullable(),
    refusal: refusalSchema.nullable().optional(),
  }),
  z.strictObject({ status: z.literal('interrupted'), ...common, step, reason: z.string() }),
  z.strictObject({ status: z.literal('failed'), ...common, step, error: z.string() }),
]);
export type TurnState = z.infer<typeof turnStateSchema>;
export type TurnStatus = TurnState['status'];

export const turnEventSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('start'), text: z.string().min(1) }),
  z.strictObject({
    type: z.literal('model_response'),
    content: z.array(contentBlockSchema),
    stopReason: z.string().nullable().optional(),
    usage: callUsageSchema,
    /** A tool_use cut by max_tokens, left out of `content` (its input JSON never closed). */
    cutToolUse: z.strictObject({ id: z.string(), name: z.string() }).optional(),
    /** stop_details of a refusal, as the API sent them. */
    refusal: refusalSchema.optional(),
  }),
  z.strictObject({
    type: z.literal('model_failed'),
    message: z.string(),
    retryable: z.boolean(),
    retryAfterMs: z.number().int().nonnegative().optional(),
    /** The row of the retry table (machines/model-retry.ts); absent: transient if retryable, else fatal. */
    failureClass: modelFailureClassSchema.optional(),
    /** What the failed attempt was billed for (counted before anything else is decided). */
    usage: callUsageSchema.optional(),
  }),
  z.strictObject({ type: z.literal('timer_fired'), timerId: z.string() }),
  z.strictObject({ type: z.literal('tool'), callId: z.string(), event: toolCallEventSchema }),
  z.strictObject({ type: z.literal('answer'), callId: z.string(), text: z.string() }),
  z.strictObject({ type: z.literal('steer'), text: z.string().min(1) }),
  z.strictObject({
    type: z.literal('interrupt'),
    reason: z.string().optional(),
    partialText: z.string().optional(),
    /** What the interrupted call had been billed for (input, and output estimated from the streamed text). */
    partialUsage: callUsageSchema.optional(),
  }),
]);
export type TurnEvent = z.infer<typeof turnEventSchema>;

export const turnResultSchema = z.strictObject({
  turnId: z.string(),
  outcome: z.enum(TURN_OUTCOMES),
  steps: z.number().int().nonnegative(),
  usage: usageSchema,
  toolCalls: toolStatsSchema,
  finalOutput: z.string().nullable(),
  error: z.string().nullable(),
  exhaustion: exhaustionSchema.nullable(),
  /** Steers the turn could not apply; the session queues them as messages, never drops them. */
  unappliedSteers: z.array(z.string()),
  /** For `refused`: the API's category and explanation. */
  refusal: refusalSchema.nullable().optional(),
  /** The model's last stop_reason (max_tokens for `truncated`). */
  stopReason: z.string().nullable().optional(),
  /** The valid finish_task call that ended the turn (task agents only). */
  finish: finishTaskSchema.optional(),
});
export type TurnResult = z.infer<typeof turnResultSchema>;

export type TurnDirective =
  | ToolCallDirective
  /** Append to the conversation store, in order, before executing what follows. */
  | { readonly type: 'append_messages'; readonly messages: readonly Message[] }
  /** Call the model with the stored conversation; answer with `model_response` or `model_failed`.
   *  `maxTokens`: a larger output limit than configured; `compact`: compact the conversation
   *  first; `continuation`: the conversation ends with the model's paused answer (pause_turn). */
  | {
      readonly type: 'call_model';
      readonly turnId: string;
      readonly step: number;
      readonly attempt: number;
      readonly activityId: string;
      readonly maxTokens?: number;
      readonly compact?: boolean;
      readonly continuation?: boolean;
    }
  /** The model refused: the conversation goes back to what it was before this turn's
   *  message, as if it had not been sent (the API advises removing a refused prompt);
   *  the transcript keeps it, and its usage stays counted. */
  | { readonly type: 'rollback_turn' }
  /** The turn is over: hand the result to the session (`turn_finished`) or the parent goal. */
  | { readonly type: 'finish'; readonly result: TurnResult };

export const modelActivityId = (turnId: string, step: number, attempt: number): string => `model:${turnId}:${step}:${attempt}`;
export const retryTimerId = (turnId: string, step: number, attempt: number): string => `retry:${turnId}:${step}:${attempt}`;

export interface NewTurn {
  readonly turnId: string;
  readonly limits?: TurnLimits;
  readonly readOnlyTools?: readonly string[];
  readonly askTool?: string | null;
  readonly finishTool?: string | null;
  readonly approvalTimeoutMs?: number | null;
  readonly maxParallelTools?: number;
  readonly retryBackoffMs?: readonly number[];
  readonly maxTokens?: number | null;
  readonly raisedMaxTokens?: number | null;
}

export function createTurn(init: NewTurn): TurnState {
  return {
    status: 'idle',
    config: {
      turnId: init.turnId,
      limits: init.limits ?? { inputTokens: null, outputTokens: null, costUsd: null, maxSteps: null },
      readOnlyTools: [...(init.readOnlyTools ?? [])],
      askTool: init.askTool ?? null,
      ...(init.finishTool !== undefined && init.finishTool !== null ? { finishTool: init.finishTool } : {}),
      approvalTimeoutMs: init.approvalTimeoutMs ?? null,
      maxParallelTools: init.maxParallelTools ?? 4,
      ...(init.retryBackoffMs !== undefined ? { retryBackoffMs: [...init.retryBackoffMs] } : {}),
      ...(init.maxTokens !== undefined ? { maxTokens: init.maxTokens } : {}),
      ...(init.raisedMaxTokens !== undefined ? { raisedMaxTokens: init.raisedMaxTokens } : {}),
    },
    usage: ZERO_USAGE,
    steers: [],
    toolStats: ZERO_TOOL_STATS,
    text: null,
  };
}

const S = ['idle', 'calling_llm', 'retry_wait', 'executing_tools', 'completed', 'interrupted', 'failed'] as const;
const E = ['start', 'model_response', 'model_failed', 'timer_fired', 'tool', 'answer', 'steer', 'interrupt'] as const;
type Ev = TurnEvent['type'];
const row = (from: TurnStatus, event: Ev, to: TurnStatus, guard?: string) => (guard === undefined ? { from, event, to } : { from, event, to, guard });
const afterTools = (event: Ev, what: string) => [
  row('executing_tools', event, 'executing_tools', `${what}; calls still open`),
  row('executing_tools', event, 'calling_llm', `${what}; all calls finished`),
  row('executing_tools', event, 'completed', `${what}; all calls finished at the step limit or after finish_task`),
];

export const turnMachine = defineMachine<TurnState, TurnEvent, TurnDirective>({
  name: 'turn',
  states: S,
  events: E,
  terminal: ['completed', 'interrupted', 'failed'],
  table: [
    row('idle', 'start', 'calling_llm', 'budget left'),
    row('calling_llm', 'model_response', 'executing_tools', 'tool_use blocks, budget left'),
    row('calling_llm', 'model_response', 'calling_llm', 'no tool_use, steer pending, steps left'),
    row('calling_llm', 'model_response', 'calling_llm', 'pause_turn; or cut in a tool_use / context window exceeded, first time this step'),
    row('calling_llm', 'model_response', 'completed', 'no tool_use (end_turn / max_steps / truncated / refused), only finish_task, or budget exhausted'),
    row('calling_llm', 'model_response', 'failed', 'context window exceeded again after compaction'),
    row('calling_llm', 'model_failed', 'retry_wait', 'retry table allows another attempt, budget left'),
    row('calling_llm', 'model_failed', 'completed', 'budget exhausted by the failed attempt'),
    row('calling_llm', 'model_failed', 'failed', 'not retried by the retry table'),
    row('calling_llm', 'steer', 'calling_llm'),
    row('calling_llm', 'interrupt', 'interrupted'),
    row('retry_wait', 'timer_fired', 'calling_llm', 'this retry timer'),
    row('retry_wait', 'steer', 'retry_wait'),
    row('retry_wait', 'interrupt', 'interrupted'),
    ...afterTools('tool', 'known call'),
    ...afterTools('answer', 'ask call running'),
    ...afterTools('timer_fired', "a call's approval timer"),
    row('executing_tools', 'steer', 'executing_tools'),
    row('executing_tools', 'interrupt', 'interrupted'),
  ],
  stateSchema: turnStateSchema,
  eventSchema: turnEventSchema,
  reduce,
});

type Common = Pick<TurnState, 'config' | 'usage' | 'steers' | 'toolStats' | 'text'>;
type D = TurnDirective;
type Out = Step<TurnState, D>;

const commonOf = (s: TurnState): Common => ({ config: s.config, usage: s.usage, steers: s.steers, toolStats: s.toolStats, text: s.text });
const stepOf = (s: TurnState): number => (s.status === 'idle' ? 0 : s.step);
const append = (...messages: Message[]): D => ({ type: 'append_messages', messages });
const note = (text: string): Message => ({ role: 'assistant', content: [{ type: 'text', text }] });

function turnExhaustion(limits: TurnLimits, usage: Usage): Exhaustion | null {
  return findExhaustion({ ...NO_LIMITS, inputTokens: limits.inputTokens, outputTokens: limits.outputTokens, costUsd: limits.costUsd }, { usage });
}

interface CallOptions {
  readonly raised?: boolean | undefined;
  readonly compacted?: boolean | undefined;
  readonly compact?: boolean | undefined;
  readonly continuation?: boolean | undefined;
}

function callModel(c: Common, stepNo: number, attempt: number, directives: D[], o: CallOptions = {}): Out {
  const activityId = modelActivityId(c.config.turnId, stepNo, attempt);
  const raisedTo = o.raised === true ? c.config.raisedMaxTokens : null;
  return {
    state: {
      status: 'calling_llm',
      ...c,
      step: stepNo,
      attempt,
      activityId,
      ...(o.raised === true ? { raised: true } : {}),
      ...(o.compacted === true ? { compacted: true } : {}),
      ...(o.continuation === true ? { continuation: true } : {}),
    },
    directives: [
      ...directives,
      {
        type: 'call_model',
        turnId: c.config.turnId,
        step: stepNo,
        attempt,
        activityId,
        ...(typeof raisedTo === 'number' ? { maxTokens: raisedTo } : {}),
        ...(o.compact === true ? { compact: true } : {}),
        ...(o.continuation === true ? { continuation: true } : {}),
      },
    ],
  };
}

function result(c: Common, stepNo: number, outcome: TurnResult['outcome'], extra: Partial<TurnResult> = {}): D {
  return {
    type: 'finish',
    result: {
      turnId: c.config.turnId,
      outcome,
      steps: stepNo,
      usage: c.usage,
      toolCalls: c.toolStats,
      finalOutput: c.text,
      error: null,
      exhaustion: null,
      unappliedSteers: c.steers,
      ...extra,
    },
  };
}

function complete(
  c: Common,
  stepNo: number,
  reason: CompleteReason,
  stopReason: string | null,
  exhaustion: Exhaustion | null,
  directives: D[],
  refusal: { category: string | null; explanation: string | null } | null = null,
  finish: FinishTask | null = null,
): Out {
  const out: D[] = [...directives];
  if (exhaustion !== null) out.push(emit('budget.exhausted', { ...exhaustion, scope: `turn ${c.config.turnId}` }));
  out.push(emit('turn.completed', { turnId: c.config.turnId, reason, finalOutput: c.text, usage: c.usage, stopReason }));
  const outcome = reason === 'end_turn' ? 'completed' : reason;
  out.push(result(c, stepNo, outcome, { exhaustion, stopReason, ...(refusal !== null ? { refusal } : {}), ...(finish !== null ? { finish } : {}) }));
  return {
    state: { status: 'completed', ...c, step: stepNo, reason, stopReason, exhaustion, ...(refusal !== null ? { refusal } : {}) },
    directives: out,
  };
}

function fail(c: Common, stepNo: number, attempts: number, message: string, error: string, errorType: 'non_retryable' | 'retries_exhausted', directives: D[] = []): Out {
  const turnId = c.config.turnId;
  return {
    state: { status: 'failed', ...c, step: stepNo, error },
    directives: [
      ...directives,
      // The user's message is stored and unanswered: close it so the next turn is valid.
      append(note(`(The model could not answer: ${message})`)),
      emit('turn.error', { turnId, errorType, message, attempts }),
      result(c, stepNo, 'failed', { error }),
    ],
  };
}

const stepLimit = (c: Common, stepNo: number): Exhaustion | null =>
  c.config.limits.maxSteps !== null && stepNo >= c.config.limits.maxSteps
    ? { limit: 'steps_per_turn', allowed: c.config.limits.maxSteps, used: stepNo, over: stepNo - c.config.limits.maxSteps }
    : null;

function countResults(stats: ToolStats, calls: readonly ToolCallState[]): ToolStats {
  const next = { ...stats };
  for (const call of calls) if (isTerminalCall(call)) next[resultStatus[call.status]] += 1;
  return next;
}

function resultBlocks(calls: readonly ToolCallState[]): ContentBlock[] {
  return calls.map((call) => {
    // Callers only build the answer once every call is terminal.
    const r = isTerminalCall(call) ? call.result : { content: 'No result.', isError: true };
    return { type: 'tool_result', tool_use_id: call.callId, content: r.content, is_error: r.isError };
  });
}

/**
 * Grant permits in the model's order. Read-only calls run side by side (up to the
 * parallel limit); any other call is a barrier: it starts only when every earlier call is
 * finished and nothing runs, and no later call starts before it finishes — so a read
 * after a write sees the write, as the model intended.
 */
function schedule(calls: readonly ToolCallState[], maxParallel: number): { calls: ToolCallState[]; directives: D[] } {
  const next = [...calls];
  const directives: D[] = [];
  let running = next.filter((c) => c.status === 'running').length;
  let earlierOpen = false;
  for (let i = 0; i < next.length; i++) {
    const call = next[i];
    if (call === undefined || isTerminalCall(call)) continue;
    const barrier = !call.readOnly;
    if (call.status === 'queued') {
      const may = barrier ? !earlierOpen && running === 0 : running < maxParallel;
      if (may) {
        const granted = toolCallMachine.transition(call, { type: 'permit_granted' });
        if (granted.ok) {
          next[i] = granted.state;
          directives.push(...granted.directives);
          running++;
        }
      }
    }
    earlierOpen = true;
    if (barrier) break;
  }
  return { calls: next, directives };
}

/** After any change to the calls: start what may start; at the boundary, answer every
 *  tool_use in one user message (plus pending steers) and call the model again. */
function advance(state: Extract<TurnState, { status: 'executing_tools' }>, calls: ToolCallState[], directives: D[]): Out {
  const scheduled = schedule(calls, state.config.maxParallelTools);
  const out = [...directives, ...scheduled.directives];
  const c = commonOf(state);
  if (!scheduled.calls.every(isTerminalCall)) {
    return { state: { ...state, calls: scheduled.calls }, directives: out };
  }
  const done: Common = { ...c, toolStats: countResults(c.toolStats, scheduled.calls) };
  out.push(
    emit('turn.tools_finished', {
      turnId: c.config.turnId,
      step: state.step,
      results: scheduled.calls.map((call) => ({ callId: call.callId, status: isTerminalCall(call) ? resultStatus[call.status] : 'cancelled' })),
    }),
  );
  // The agent reported its task finished: its tools are answered, the model is not called again.
  const finish = finishOf(scheduled.calls);
  if (finish !== null) {
    out.push(append({ role: 'user', content: resultBlocks(scheduled.calls) }));
    return complete(done, state.step, 'end_turn', null, null, out, null, finish);
  }
  const limit = stepLimit(done, state.step);
  if (limit !== null) {
    out.push(append({ role: 'user', content: resultBlocks(scheduled.calls) }, note(`(Stopped: the limit of ${limit.allowed} steps per turn was reached.)`)));
    return complete(done, state.step, 'max_steps', null, limit, out);
  }
  const steer: ContentBlock[] = done.steers.map((text) => ({ type: 'text', text }));
  out.push(append({ role: 'user', content: [...resultBlocks(scheduled.calls), ...steer] }));
  if (steer.length > 0) out.push(emit('turn.steer_applied', { turnId: c.config.turnId, step: state.step + 1, count: steer.length }));
  return callModel({ ...done, steers: [] }, state.step + 1, 1, out);
}

/** The first finish call of the step that the turn accepted, if any. */
function finishOf(calls: readonly ToolCallState[]): FinishTask | null {
  for (const call of calls) {
    if (call.kind !== 'finish' || call.status !== 'succeeded') continue;
    const parsed = parseFinishTask(call.input);
    if (parsed.ok) return parsed.value;
  }
  return null;
}

/** A finish call is answered by the turn itself, at once: accepted, or refused with the problems for the model to fix. */
function recordFinish(call: ToolCallState): { call: ToolCallState; directives: D[] } {
  const parsed = parseFinishTask(call.input);
  const events: ToolCallEvent[] = [
    { type: 'policy_decided', decision: 'allow', reason: 'finishing a task needs no approval' },
    { type: 'permit_granted' },
    parsed.ok
      ? { type: 'succeeded', output: `Recorded: the task ${parsed.value.status}.` }
      : { type: 'failed', error: `invalid input for ${call.name}:\n${parsed.problems.map((p) => `- ${p}`).join('\n')}\nCall it again with status and summary.` },
  ];
  let state = call;
  const directives: D[] = [];
  for (const event of events) {
    const r = toolCallMachine.transition(state, event);
    if (!r.ok) break;
    state = r.state;
    directives.push(...r.directives);
  }
  return { call: state, directives };
}

function onToolEvent(state: TurnState, callId: string, event: ToolCallEvent): Out {
  if (state.status !== 'executing_tools') return reject('no tools are running');
  const index = state.calls.findIndex((c) => c.callId === callId);
  const call = state.calls[index];
  if (call === undefined) return reject(`unknown tool call ${callId}`);
  const r = toolCallMachine.transition(call, event);
  if (!r.ok) return reject(r.error.message);
  const calls = [...state.calls];
  calls[index] = r.state;
  return advance(state, calls, [...r.directives]);
}

function onModelResponse(state: Extract<TurnState, { status: 'calling_llm' }>, event: Extract<TurnEvent, { type: 'model_response' }>): Out {
  const content: ContentBlock[] = event.content;
  const text = content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('');
  const stopReason = event.stopReason ?? null;
  const turnId = state.config.turnId;
  // Every billed token counts, whatever happens to the answer.
  const spent: Common = { ...commonOf(state), usage: addCallUsage(state.usage, event.usage) };
  const exhaustion = turnExhaustion(spent.config.limits, spent.usage);
  const escalated = { raised: state.raised, compacted: state.compacted, continuation: state.continuation };
  const attemptsLeft = state.attempt < MAX_CALL_ATTEMPTS;

  // The request did not fit: compact and try once more; never the same request again.
  if (stopReason === 'model_context_window_exceeded') {
    if (state.compacted === true || !attemptsLeft) {
      const message = 'the conversation exceeds the context window even after compaction';
      return fail(spent, state.step, state.attempt, message, message, 'non_retryable');
    }
    if (exhaustion !== null) return complete(spent, state.step, 'budget_exhausted', stopReason, exhaustion, []);
    return callModel(spent, state.step, state.attempt + 1, [emit('turn.continued', { turnId, step: state.step, why: 'context_window', maxTokens: null })], {
      ...escalated,
      compacted: true,
      compact: true,
    });
  }
  // A refusal ends the turn; nothing the model did not say goes into the conversation.
  if (stopReason === 'refusal') {
    const refusal = event.refusal ?? { category: null, explanation: null };
    const refused: Common = { ...spent, text: text === '' ? null : text };
    return complete(refused, state.step, 'refused', stopReason, null, [emit('turn.refused', { turnId, step: state.step, ...refusal }), { type: 'rollback_turn' }], refusal);
  }
  // Cut inside a tool call: its input is broken JSON. Once a step, ask again with a larger
  // limit (a different request); otherwise the turn ends `truncated`.
  if (event.cutToolUse !== undefined) {
    const raised = spent.config.raisedMaxTokens ?? null;
    if (state.raised !== true && raised !== null && exhaustion === null && attemptsLeft) {
      return callModel(spent, state.step, state.attempt + 1, [emit('turn.continued', { turnId, step: state.step, why: 'max_tokens', maxTokens: raised })], {
        ...escalated,
        raised: true,
      });
    }
    // Only what is whole is kept: text and thinking, not tool calls nobody will answer.
    const kept = content.filter((b) => b.type !== 'tool_use');
    const out: D[] = kept.length > 0 ? [append({ role: 'assistant', content: kept })] : [];
    out.push(emit('turn.truncated', { turnId, step: state.step, inToolUse: true, maxTokens: state.raised === true ? raised : (spent.config.maxTokens ?? null) }));
    const truncated: Common = { ...spent, text: text === '' ? state.text : text };
    return complete(truncated, state.step, exhaustion !== null ? 'budget_exhausted' : 'truncated', stopReason, exhaustion, out);
  }

  const c: Common = { ...spent, text: text === '' ? state.text : text };
  // An empty answer stays empty: no made-up text goes back to the model.
  const out: D[] = content.length > 0 ? [append({ role: 'assistant', content })] : [];
  const uses = content.flatMap((b) => (b.type === 'tool_use' ? [b] : []));

  if (uses.length === 0 && stopReason === 'max_tokens') {
    out.push(emit('turn.truncated', { turnId, step: state.step, inToolUse: false, maxTokens: state.raised === true ? (c.config.raisedMaxTokens ?? null) : (c.config.maxTokens ?? null) }));
    return complete(c, state.step, exhaustion !== null ? 'budget_exhausted' : 'truncated', stopReason, exhaustion, out);
  }
  // A paused long-running turn: send the answer back as it is and the model goes on.
  if (uses.length === 0 && stopReason === 'pause_turn' && content.length > 0 && exhaustion === null) {
    const limit = stepLimit(c, state.step);
    if (limit !== null) return complete(c, state.step, 'max_steps', stopReason, limit, out);
    out.push(emit('turn.continued', { turnId, step: state.step + 1, why: 'pause_turn', maxTokens: null }));
    return callModel(c, state.step + 1, 1, out, { continuation: true });
  }

  if (uses.length === 0) {
    if (exhaustion !== null) return complete(c, state.step, 'budget_exhausted', stopReason, exhaustion, out);
    if (c.steers.length === 0) return complete(c, state.step, 'end_turn', stopReason, null, out);
    const limit = stepLimit(c, state.step);
    if (limit !== null) return complete(c, state.step, 'max_steps', stopReason, limit, out);
    out.push(append({ role: 'user', content: c.steers.map((t) => ({ type: 'text', text: t })) }));
    out.push(emit('turn.steer_applied', { turnId: c.config.turnId, step: state.step + 1, count: c.steers.length }));
    return callModel({ ...c, steers: [] }, state.step + 1, 1, out);
  }

  out.push(emit('turn.tool_calls_received', { turnId: c.config.turnId, step: state.step, callIds: uses.map((u) => u.id) }));
  const calls: ToolCallState[] = [];
  for (const use of uses) {
    const kind = use.name === c.config.askTool ? 'ask' : c.config.finishTool != null && use.name === c.config.finishTool ? 'finish' : 'tool';
    const created = createToolCall({
      callId: use.id,
      name: use.name,
      input: use.input,
      readOnly: kind === 'tool' && c.config.readOnlyTools.includes(use.name),
      kind,
      approvalTimeoutMs: c.config.approvalTimeoutMs,
    });
    out.push(...created.directives);
    let call = created.state;
    if (kind === 'finish') {
      // Recorded even when the budget ran out in this answer: it is the agent's report of work already done.
      const recorded = recordFinish(call);
      out.push(...recorded.directives);
      calls.push(recorded.call);
      continue;
    }
    const followUp: ToolCallEvent | null =
      exhaustion !== null
        ? { type: 'cancel', reason: `not run, the ${exhaustion.limit} budget is exhausted` }
        : kind === 'ask'
          ? { type: 'policy_decided', decision: 'allow', reason: 'asking the user needs no approval' }
          : null;
    if (followUp !== null) {
      const r = toolCallMachine.transition(call, followUp);
      if (r.ok) {
        call = r.state;
        out.push(...r.directives);
      }
    }
    calls.push(call);
  }
  if (exhaustion !== null) {
    // The tool_use blocks are already stored: answer them so the conversation stays valid.
    out.push(append({ role: 'user', content: resultBlocks(calls) }, note('(Stopped: the budget is exhausted.)')));
    return complete({ ...c, toolStats: countResults(c.toolStats, calls) }, state.step, 'budget_exhausted', stopReason, exhaustion, out, null, finishOf(calls));
  }
  return advance({ status: 'executing_tools', ...c, step: state.step, calls }, calls, out);
}

function reduce(state: TurnState, event: TurnEvent): Out {
  const c = commonOf(state);
  const turnId = c.config.turnId;
  switch (event.type) {
    case 'start': {
      if (state.status !== 'idle') return reject('the turn has already started');
      const exhausted = turnExhaustion(c.config.limits, c.usage);
      if (exhausted !== null) return reject(`no ${exhausted.limit} budget left for a turn`);
      return callModel(c, 1, 1, [emit('turn.started', { turnId, input: event.text }), append({ role: 'user', content: [{ type: 'text', text: event.text }] })]);
    }
    case 'model_response':
      if (state.status !== 'calling_llm') return reject('no model call in flight');
      return onModelResponse(state, event);
    case 'model_failed': {
      if (state.status !== 'calling_llm') return reject('no model call in flight');
      // A failed attempt is real spend: counted first, so a budget stops a call that keeps failing.
      const spent: Common = event.usage !== undefined ? { ...c, usage: addCallUsage(c.usage, event.usage) } : c;
      const failureClass = event.failureClass ?? (event.retryable ? 'transient' : 'fatal');
      // Compaction is once a call (its own counter); every retry comes out of the call's attempts.
      const decision =
        state.attempt >= MAX_CALL_ATTEMPTS
          ? ({ retry: false, reason: 'attempts spent' } as const)
          : retryDecision('turn', failureClass, failureClass === 'context_window' ? (state.compacted === true ? 2 : 1) : state.attempt, event.retryAfterMs, c.config.retryBackoffMs);
      const exhaustion = turnExhaustion(spent.config.limits, spent.usage);
      if (decision.retry && exhaustion !== null) {
        return complete(spent, state.step, 'budget_exhausted', null, exhaustion, [append(note(`(Stopped: the budget is exhausted; the model call failed: ${event.message})`))]);
      }
      if (decision.retry) {
        const { delayMs } = decision;
        const timerId = retryTimerId(turnId, state.step, state.attempt);
        return {
          state: {
            status: 'retry_wait',
            ...spent,
            step: state.step,
            attempt: state.attempt,
            timerId,
            error: event.message,
            ...(state.raised === true ? { raised: true } : {}),
            ...(state.continuation === true ? { continuation: true } : {}),
            ...(state.compacted === true || decision.compact ? { compacted: true } : {}),
            ...(decision.compact ? { compact: true } : {}),
          },
          directives: [
            emit('turn.retry_scheduled', { turnId, step: state.step, attempt: state.attempt + 1, delayMs, error: event.message }),
            startTimer(timerId, delayMs),
          ],
        };
      }
      const retried = state.attempt > 1;
      const error = retried ? `the model failed ${state.attempt} times: ${event.message}` : event.message;
      return fail(spent, state.step, state.attempt, event.message, error, retried ? 'retries_exhausted' : 'non_retryable');
    }
    case 'timer_fired': {
      if (state.status === 'retry_wait') {
        if (event.timerId !== state.timerId) return reject(`timer ${event.timerId} is not the retry timer`);
        return callModel(c, state.step, state.attempt + 1, [], { raised: state.raised, compacted: state.compacted, compact: state.compact, continuation: state.continuation });
      }
      if (state.status !== 'executing_tools') return reject('no timer is running');
      const call = state.calls.find((x) => x.status === 'awaiting_approval' && x.timerId === event.timerId);
      if (call === undefined) return reject(`timer ${event.timerId} belongs to no call awaiting approval`);
      return onToolEvent(state, call.callId, event);
    }
    case 'tool':
      if (event.event.type === 'permit_granted') return reject('permits are granted by the turn, not from outside');
      return onToolEvent(state, event.callId, event.event);
    case 'answer': {
      if (state.status !== 'executing_tools') return reject('no question is pending');
      const call = state.calls.find((x) => x.callId === event.callId);
      if (call === undefined || call.kind !== 'ask' || call.status !== 'running') return reject(`no question is pending for call ${event.callId}`);
      return onToolEvent(state, event.callId, { type: 'succeeded', output: event.text });
    }
    case 'steer':
      if (state.status !== 'calling_llm' && state.status !== 'retry_wait' && state.status !== 'executing_tools') return reject('nothing to steer');
      return { state: { ...state, steers: [...state.steers, event.text] }, directives: [emit('turn.steer_queued', { turnId, text: event.text })] };
    case 'interrupt':
      return interrupt(state, event.reason ?? 'interrupted by the user', event.partialText ?? '', event.partialUsage);
    default:
      return assertNever(event);
  }
}

function interrupt(state: TurnState, reason: string, partial: string, partialUsage: CallUsage | undefined): Out {
  const base = commonOf(state);
  // The interrupted call's input and streamed output were billed: they count.
  const c: Common = state.status === 'calling_llm' && partialUsage !== undefined ? { ...base, usage: addCallUsage(base.usage, partialUsage) } : base;
  const turnId = c.config.turnId;
  const out: D[] = [];
  let done = c;
  let partialOutput: string | null = null;
  switch (state.status) {
    case 'calling_llm':
      out.push(cancelActivity(state.activityId));
      // Keep what the model had already said; an empty text block would be refused.
      partialOutput = partial.trim() === '' ? null : partial;
      out.push(append(note(partialOutput ?? '(interrupted)')));
      if (partialOutput !== null) done = { ...c, text: partialOutput };
      break;
    case 'retry_wait':
      out.push(cancelTimer(state.timerId), append(note('(interrupted)')));
      break;
    case 'executing_tools': {
      const calls = state.calls.map((call) => {
        if (isTerminalCall(call)) return call;
        const r = toolCallMachine.transition(call, { type: 'cancel', reason });
        if (!r.ok) return call;
        out.push(...r.directives);
        return r.state;
      });
      // Every tool_use gets its result (cancelled if unfinished) before the next model call.
      out.push(append({ role: 'user', content: resultBlocks(calls) }, note('(interrupted)')));
      done = { ...c, toolStats: countResults(c.toolStats, calls) };
      break;
    }
    case 'idle':
    case 'completed':
    case 'interrupted':
    case 'failed':
      return reject('nothing to interrupt');
    default:
      return assertNever(state);
  }
  const at = stepOf(state);
  out.push(emit('turn.interrupted', { turnId, reason, partialOutput }), result(done, at, 'interrupted'));
  return { state: { status: 'interrupted', ...done, step: at, reason }, directives: out };
}

/** Calls waiting for a human decision: for the `pendingApprovals` query. */
export function pendingApprovals(state: TurnState): { callId: string; name: string; input: ToolCallState['input']; reason: string | null }[] {
  if (state.status !== 'executing_tools') return [];
  return state.calls.flatMap((c) => (c.status === 'awaiting_approval' ? [{ callId: c.callId, name: c.name, input: c.input, reason: c.reason }] : []));
}
