// One tool invocation, from the model's tool_use to its single terminal result (seed 002
// Tool lifecycle, seed 000 Tool execution). The approval policy is evaluated elsewhere;
// its verdict arrives here as `policy_decided`. The concurrency permit comes from the turn
// that owns the call, which decides what may run in parallel.
import { z } from 'zod';
import { assertNever, defineMachine, jsonSchema, reject, type Json, type Step } from './core';
import { cancelActivity, cancelTimer, startTimer, type CancelActivity, type CancelTimer, type StartTimer } from './directives';
import { emit, type EmitEvent, type ToolResultStatus } from './events';
import { toolFactsSchema, type ToolFacts } from './tool-result';
import { usageSchema } from './budget';
import { lazySchema, once } from './lazy-schema';
import { storedOutputSchema, type StoredOutput } from './stored-output';

const resultSchema = lazySchema(() => z.strictObject({ content: z.string(), isError: z.boolean(), facts: toolFactsSchema.optional(), stored: storedOutputSchema.optional() }));
/** How a call ended, as the model will read it in the tool_result block. Not a tool's own
 *  output (machines/tool-result.ts ToolResult, which the runner translates into events). */
export type CallResult = z.infer<typeof resultSchema>;

const common = once(() => ({
  callId: z.string().min(1),
  name: z.string().min(1),
  input: jsonSchema,
  /** Read-only calls of one step may run in parallel; anything else runs alone. */
  readOnly: z.boolean(),
  /** `ask` is the ask-the-human tool: it is answered by a person, not an activity.
   *  `finish` is the task agent's finish_task: recorded by the turn, it ends the turn. */
  kind: z.enum(['tool', 'ask', 'finish']),
  approvalTimeoutMs: z.number().int().positive().nullable(),
}));

export const toolCallStateSchema = lazySchema(() => z.discriminatedUnion('status', [
  z.strictObject({ status: z.literal('pending'), ...common() }),
  z.strictObject({ status: z.literal('awaiting_approval'), ...common(), reason: z.string().nullable(), timerId: z.string().nullable() }),
  z.strictObject({ status: z.literal('queued'), ...common(), approvedBy: z.string() }),
  z.strictObject({ status: z.literal('running'), ...common(), activityId: z.string() }),
  z.strictObject({ status: z.literal('succeeded'), ...common(), result: resultSchema }),
  z.strictObject({ status: z.literal('failed'), ...common(), result: resultSchema }),
  z.strictObject({ status: z.literal('timed_out'), ...common(), result: resultSchema }),
  /** Stopped by a sandbox limit (memory, processes, CPU time, file size, /tmp): `result.facts.limit` says which. */
  z.strictObject({ status: z.literal('limit'), ...common(), result: resultSchema }),
  z.strictObject({ status: z.literal('cancelled'), ...common(), result: resultSchema }),
  z.strictObject({ status: z.literal('denied'), ...common(), result: resultSchema, by: z.enum(['policy', 'human']) }),
]));
export type ToolCallState = z.infer<typeof toolCallStateSchema>;
export type ToolCallStatus = ToolCallState['status'];
export type TerminalToolCall = Extract<ToolCallState, { result: CallResult }>;

export const toolCallEventSchema = lazySchema(() => z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('policy_decided'), decision: z.enum(['allow', 'ask', 'deny']), reason: z.string().optional() }),
  z.strictObject({ type: z.literal('approved'), approver: z.string().optional(), scope: z.enum(['once', 'session']).optional() }),
  z.strictObject({ type: z.literal('denied'), reason: z.string().optional() }),
  z.strictObject({ type: z.literal('timer_fired'), timerId: z.string() }),
  z.strictObject({ type: z.literal('permit_granted') }),
  /** `usage`: what a sub-agent spent doing the call (machines/sub-agents.ts): its parent's turn counts it. */
  /** `stored`: the text is a preview of a result kept in the conversation store (machines/stored-output.ts). */
  z.strictObject({ type: z.literal('succeeded'), output: z.string(), facts: toolFactsSchema.optional(), usage: usageSchema.optional(), stored: storedOutputSchema.optional() }),
  z.strictObject({ type: z.literal('failed'), error: z.string(), facts: toolFactsSchema.optional(), usage: usageSchema.optional(), stored: storedOutputSchema.optional() }),
  z.strictObject({ type: z.literal('timed_out'), message: z.string().optional(), facts: toolFactsSchema.optional(), stored: storedOutputSchema.optional() }),
  /** The sandbox ended the command at one of its limits; the facts name it. */
  z.strictObject({ type: z.literal('limit_hit'), message: z.string(), facts: toolFactsSchema.optional(), stored: storedOutputSchema.optional() }),
  z.strictObject({ type: z.literal('cancel'), reason: z.string().optional() }),
]));
export type ToolCallEvent = z.infer<typeof toolCallEventSchema>;

export type ToolCallDirective =
  | EmitEvent
  | StartTimer
  | CancelTimer
  | CancelActivity
  /** Evaluate the approval policy; answer with `policy_decided`. */
  | { readonly type: 'check_policy'; readonly callId: string; readonly name: string; readonly input: Json }
  /** Surface the call to humans (pending approvals query, search attribute). */
  | { readonly type: 'request_approval'; readonly callId: string; readonly name: string; readonly input: Json; readonly reason: string | null }
  /** Run the tool activity; answer with `succeeded` / `failed` / `timed_out` / `limit_hit`. Its progress
   *  never comes here: the activity publishes `tool.progress` on the stream's tool topic
   *  (activities/tools/progress.ts). */
  | { readonly type: 'run_tool'; readonly callId: string; readonly activityId: string; readonly name: string; readonly input: Json }
  /** The ask-the-human tool: put the question to a person; the answer completes the call. */
  | { readonly type: 'ask_human'; readonly callId: string; readonly question: string };

const S = ['pending', 'awaiting_approval', 'queued', 'running', 'succeeded', 'failed', 'timed_out', 'limit', 'cancelled', 'denied'] as const;
const E = ['policy_decided', 'approved', 'denied', 'timer_fired', 'permit_granted', 'succeeded', 'failed', 'timed_out', 'limit_hit', 'cancel'] as const;

const row = <F extends ToolCallStatus, V extends ToolCallEvent['type'], T extends ToolCallStatus>(from: F, event: V, to: T, guard?: string) =>
  guard === undefined ? { from, event, to } : { from, event, to, guard };

export const toolCallMachine = defineMachine<ToolCallState, ToolCallEvent, ToolCallDirective>({
  name: 'tool-call',
  states: S,
  events: E,
  terminal: ['succeeded', 'failed', 'timed_out', 'limit', 'cancelled', 'denied'],
  table: [
    row('pending', 'policy_decided', 'queued', 'allow'),
    row('pending', 'policy_decided', 'awaiting_approval', 'ask'),
    row('pending', 'policy_decided', 'denied', 'deny'),
    row('pending', 'cancel', 'cancelled'),
    row('awaiting_approval', 'approved', 'queued'),
    row('awaiting_approval', 'denied', 'denied'),
    row('awaiting_approval', 'timer_fired', 'timed_out', 'approval timer of this call'),
    row('awaiting_approval', 'cancel', 'cancelled'),
    row('queued', 'permit_granted', 'running'),
    row('queued', 'cancel', 'cancelled'),
    row('running', 'succeeded', 'succeeded'),
    row('running', 'failed', 'failed'),
    row('running', 'timed_out', 'timed_out'),
    row('running', 'limit_hit', 'limit'),
    row('running', 'cancel', 'cancelled'),
  ],
  stateSchema: toolCallStateSchema,
  eventSchema: toolCallEventSchema,
  reduce,
});

export interface NewToolCall {
  readonly callId: string;
  readonly name: string;
  readonly input: Json;
  readonly readOnly: boolean;
  readonly kind: 'tool' | 'ask' | 'finish';
  readonly approvalTimeoutMs: number | null;
}

/** A call enters as `pending` and is announced (`tool.call`) before anything else can
 *  happen to it: INV-TOOL-CALL-BEFORE-RESULT holds by construction. */
export function createToolCall(call: NewToolCall): { state: ToolCallState; directives: ToolCallDirective[] } {
  const state: ToolCallState = { status: 'pending', ...call };
  const directives: ToolCallDirective[] = [emit('tool.call', { callId: call.callId, toolName: call.name, arguments: call.input })];
  // The ask and finish tools need no policy: asking a person and reporting are always allowed.
  if (call.kind === 'tool') directives.push({ type: 'check_policy', callId: call.callId, name: call.name, input: call.input });
  return { state, directives };
}

export const toolActivityId = (callId: string): string => `tool:${callId}`;
export const approvalTimerId = (callId: string): string => `approval:${callId}`;

export function isTerminalCall(call: ToolCallState): call is TerminalToolCall {
  return 'result' in call;
}

export const resultStatus: Record<TerminalToolCall['status'], ToolResultStatus> = {
  succeeded: 'success',
  failed: 'error',
  timed_out: 'timeout',
  limit: 'limit',
  cancelled: 'cancelled',
  denied: 'denied',
};

function questionOf(input: Json): string {
  if (typeof input === 'object' && input !== null && !Array.isArray(input) && typeof input.question === 'string') return input.question;
  return JSON.stringify(input);
}

function withFacts(result: CallResult, facts: ToolFacts | undefined, stored?: StoredOutput): CallResult {
  const withStored = stored === undefined ? result : { ...result, stored };
  return facts === undefined ? withStored : { ...withStored, facts };
}

function finish(
  state: ToolCallState,
  status: TerminalToolCall['status'],
  result: CallResult,
  extra: ToolCallDirective[] = [],
  by: 'policy' | 'human' = 'human',
): Step<ToolCallState, ToolCallDirective> {
  const { callId, name, input, readOnly, kind, approvalTimeoutMs } = state;
  const base = { callId, name, input, readOnly, kind, approvalTimeoutMs, result };
  const next: ToolCallState = status === 'denied' ? { status, ...base, by } : { status, ...base };
  return {
    state: next,
    directives: [...extra, emit('tool.result', { callId, status: resultStatus[status], output: result.content, ...(result.facts !== undefined ? { facts: result.facts } : {}) })],
  };
}

function reduce(state: ToolCallState, event: ToolCallEvent): Step<ToolCallState, ToolCallDirective> {
  const { callId, name, input, readOnly, kind, approvalTimeoutMs } = state;
  const base = { callId, name, input, readOnly, kind, approvalTimeoutMs };
  switch (event.type) {
    case 'policy_decided': {
      if (state.status !== 'pending') return reject('not pending');
      const reason = event.reason ?? null;
      if (event.decision === 'allow') {
        return { state: { status: 'queued', ...base, approvedBy: 'policy' }, directives: [emit('tool.queued', { callId })] };
      }
      if (event.decision === 'deny') {
        const why = reason ?? 'denied by policy';
        return finish(state, 'denied', { content: `Denied: ${why}. The tool was not run.`, isError: true }, [emit('tool.denied', { callId, by: 'policy', reason: why })], 'policy');
      }
      const timerId = approvalTimeoutMs === null ? null : approvalTimerId(callId);
      const directives: ToolCallDirective[] = [
        emit('tool.approval_requested', { callId, toolName: name, policyReason: reason }),
        { type: 'request_approval', callId, name, input, reason },
      ];
      if (timerId !== null && approvalTimeoutMs !== null) directives.push(startTimer(timerId, approvalTimeoutMs));
      return { state: { status: 'awaiting_approval', ...base, reason, timerId }, directives };
    }
    case 'approved': {
      if (state.status !== 'awaiting_approval') return reject('not awaiting approval');
      const approver = event.approver ?? 'human';
      const directives: ToolCallDirective[] = [emit('tool.approved', { callId, approver, scope: event.scope ?? 'once' })];
      if (state.timerId !== null) directives.push(cancelTimer(state.timerId));
      directives.push(emit('tool.queued', { callId }));
      return { state: { status: 'queued', ...base, approvedBy: approver }, directives };
    }
    case 'denied': {
      if (state.status !== 'awaiting_approval') return reject('not awaiting approval');
      const why = event.reason ?? 'denied by the user';
      const extra: ToolCallDirective[] = [emit('tool.denied', { callId, by: 'human', reason: why })];
      if (state.timerId !== null) extra.push(cancelTimer(state.timerId));
      return finish(state, 'denied', { content: `Denied: ${why}. The tool was not run.`, isError: true }, extra);
    }
    case 'timer_fired': {
      if (state.status !== 'awaiting_approval') return reject('not awaiting approval');
      if (state.timerId !== event.timerId) return reject(`timer ${event.timerId} is not this call's approval timer`);
      return finish(state, 'timed_out', { content: 'No one approved this tool call in time; it was not run.', isError: true });
    }
    case 'permit_granted': {
      if (state.status !== 'queued') return reject('not queued');
      const activityId = toolActivityId(callId);
      // A finish call runs nowhere: the turn records it and completes it at once.
      const start: ToolCallDirective[] =
        kind === 'ask' ? [{ type: 'ask_human', callId, question: questionOf(input) }] : kind === 'finish' ? [] : [{ type: 'run_tool', callId, activityId, name, input }];
      return {
        state: { status: 'running', ...base, activityId },
        directives: [emit('tool.started', { callId }), ...start],
      };
    }
    case 'succeeded':
      if (state.status !== 'running') return reject('not running');
      return finish(state, 'succeeded', withFacts({ content: event.output, isError: false }, event.facts, event.stored));
    case 'failed':
      if (state.status !== 'running') return reject('not running');
      return finish(state, 'failed', withFacts({ content: event.error, isError: true }, event.facts, event.stored));
    case 'timed_out':
      if (state.status !== 'running') return reject('not running');
      return finish(state, 'timed_out', withFacts({ content: event.message ?? 'The tool timed out.', isError: true }, event.facts, event.stored));
    case 'limit_hit':
      if (state.status !== 'running') return reject('not running');
      return finish(state, 'limit', withFacts({ content: event.message, isError: true }, event.facts, event.stored));
    case 'cancel': {
      const why = event.reason ?? 'cancelled';
      const extra: ToolCallDirective[] = [];
      if (state.status === 'running' && kind === 'tool') extra.push(cancelActivity(state.activityId));
      if (state.status === 'awaiting_approval' && state.timerId !== null) extra.push(cancelTimer(state.timerId));
      if (isTerminalCall(state)) return reject('already finished');
      return finish(state, 'cancelled', { content: `Cancelled: ${why}. The tool did not finish.`, isError: true }, extra);
    }
    default:
      return assertNever(event);
  }
}
