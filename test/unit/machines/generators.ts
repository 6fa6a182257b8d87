// Model-based event generators: for any state, the events a runner could plausibly feed
// (valid ones, plus wrong-state and wrong-id ones). A random walk picks among them with a
// list of numbers, so fast-check can generate, replay and shrink long sequences.
import {
  createGoal,
  createSession,
  createStream,
  createToolCall,
  createTurn,
  type ContentBlock,
  type GoalEvent,
  type GoalState,
  type Machine,
  type SessionEvent,
  type SessionState,
  type StreamEvent,
  type StreamState,
  type TaskInput,
  type ToolCallEvent,
  type ToolCallState,
  type TransitionResult,
  type TurnEvent,
  type TurnState,
} from '../../../machines/index';

export interface Step<St, Ev, D> {
  readonly before: St;
  readonly event: Ev;
  readonly result: TransitionResult<St, D>;
}

/** Pick from `items` with one number; "disruptive" items only when the number says so,
 *  so walks go deep instead of ending at the first interrupt. */
export function pick<T>(choice: number, items: readonly T[], disruptive: readonly T[] = [], rarity = 6): T {
  const pool = choice % rarity === 0 && disruptive.length > 0 ? disruptive : items.length > 0 ? items : disruptive;
  const item = pool[Math.floor(choice / rarity) % pool.length];
  if (item === undefined) throw new Error('nothing to pick from');
  return item;
}

export function walk<St extends { status: string }, Ev extends { type: string }, D>(
  apply: (state: St, event: Ev) => TransitionResult<St, D>,
  initial: St,
  candidates: (state: St, choice: number) => Ev,
  choices: readonly number[],
): { steps: Step<St, Ev, D>[]; final: St } {
  let state = initial;
  const steps: Step<St, Ev, D>[] = [];
  for (const choice of choices) {
    const event = candidates(state, choice);
    const result = apply(state, event);
    steps.push({ before: state, event, result });
    if (result.ok) state = result.state;
  }
  return { steps, final: state };
}

// ---------------------------------------------------------------- tool call

export function newToolCall(kind: 'tool' | 'ask' = 'tool', readOnly = false): ToolCallState {
  return createToolCall({ callId: 'c1', name: kind === 'ask' ? 'ask' : 'write', input: { path: 'a' }, readOnly, kind, approvalTimeoutMs: 1000 }).state;
}

export function toolCallEvents(state: ToolCallState): ToolCallEvent[] {
  const timer = state.status === 'awaiting_approval' && state.timerId !== null ? state.timerId : 'approval:c1';
  return [
    { type: 'policy_decided', decision: 'allow' },
    { type: 'policy_decided', decision: 'ask', reason: 'writes need approval' },
    { type: 'policy_decided', decision: 'deny', reason: 'rule deny write(/etc/**)' },
    { type: 'approved', approver: 'ann', scope: 'once' },
    { type: 'denied', reason: 'no' },
    { type: 'timer_fired', timerId: timer },
    { type: 'timer_fired', timerId: 'approval:other' },
    { type: 'permit_granted' },
    { type: 'succeeded', output: 'done' },
    { type: 'failed', error: 'exit 1' },
    { type: 'timed_out' },
    { type: 'limit_hit', message: '[limit: memory limit: 8 GiB of data memory]' },
  ];
}

export const toolCallCandidates = (state: ToolCallState, choice: number): ToolCallEvent =>
  pick(choice, toolCallEvents(state), [{ type: 'cancel', reason: 'interrupted' }]);

// ---------------------------------------------------------------- turn

export const TURN_TOOLS = { readOnlyTools: ['read'], askTool: 'ask' } as const;

export function newTurn(variant: number, turnId = 't1', limits?: TurnState['config']['limits']): TurnState {
  const presets: TurnState['config']['limits'][] = [
    { inputTokens: null, outputTokens: null, costUsd: null, maxSteps: null },
    { inputTokens: 2_000, outputTokens: null, costUsd: null, maxSteps: 4 },
    { inputTokens: null, outputTokens: 600, costUsd: 1.5, maxSteps: 2 },
    { inputTokens: null, outputTokens: null, costUsd: null, maxSteps: 1 },
  ];
  return createTurn({
    turnId,
    limits: limits ?? presets[variant % presets.length],
    ...TURN_TOOLS,
    approvalTimeoutMs: variant % 3 !== 2 ? 5_000 : null,
    maxParallelTools: 2,
    maxTokens: 1_000,
    raisedMaxTokens: variant % 2 === 0 ? 4_000 : null,
  });
}

const TOOL_SETS: readonly (readonly string[])[] = [['read'], ['read', 'read', 'read'], ['write'], ['read', 'write', 'read'], ['ask'], ['read', 'ask'], ['write', 'write'], ['ask', 'read']];

export function modelResponse(turnId: string, step: number, choice: number): TurnEvent {
  const usage = { inputTokens: [100, 400, 900][choice % 3] ?? 100, outputTokens: [50, 200][choice % 2] ?? 50, costUsd: [0.125, 0.5, null][choice % 3] ?? null };
  if (choice % 4 === 0) return { type: 'model_response', content: [{ type: 'text', text: `answer ${step}` }], stopReason: 'end_turn', usage };
  if (choice % 11 === 1) return { type: 'model_response', content: [], stopReason: 'end_turn', usage };
  const names = TOOL_SETS[choice % TOOL_SETS.length] ?? ['read'];
  const content: ContentBlock[] = [
    { type: 'thinking', thinking: 'plan', signature: 'sig' },
    { type: 'text', text: `step ${step}` },
    ...names.map((name, k): ContentBlock => ({ type: 'tool_use', id: `${turnId}-s${step}-${k}`, name, input: name === 'ask' ? { question: 'which file?' } : { path: `f${k}` } })),
  ];
  return { type: 'model_response', content, stopReason: 'tool_use', usage };
}

/** The stop reasons that are not a plain answer: pause, truncation (plain or inside a tool call), refusal, context window. */
function edgeResponse(step: number, choice: number): TurnEvent {
  const usage = { inputTokens: 300, outputTokens: 1_000, costUsd: 0.2 };
  const said: ContentBlock[] = [{ type: 'text', text: `partial ${step}` }];
  switch (Math.floor(choice / 7) % 5) {
    case 0:
      return { type: 'model_response', content: said, stopReason: 'pause_turn', usage };
    case 1:
      return { type: 'model_response', content: said, stopReason: 'max_tokens', usage };
    case 2:
      return { type: 'model_response', content: said, stopReason: 'max_tokens', usage, cutToolUse: { id: `cut-${step}`, name: 'write' } };
    case 3:
      return { type: 'model_response', content: [], stopReason: 'refusal', usage, refusal: { category: 'cyber', explanation: 'not this' } };
    default:
      return { type: 'model_response', content: [], stopReason: 'model_context_window_exceeded', usage };
  }
}

export function turnEvents(state: TurnState, choice: number): { normal: TurnEvent[]; disruptive: TurnEvent[] } {
  const turnId = state.config.turnId;
  const normal: TurnEvent[] = [];
  const disruptive: TurnEvent[] = [{ type: 'interrupt', reason: 'user pressed stop', partialText: choice % 2 === 0 ? 'partial answ' : '  ' }];
  switch (state.status) {
    case 'idle':
      normal.push({ type: 'start', text: 'hello' });
      break;
    case 'calling_llm':
      normal.push(modelResponse(turnId, state.step, choice), modelResponse(turnId, state.step, choice + 1));
      normal.push({ type: 'model_failed', message: '529 overloaded', retryable: true });
      normal.push({ type: 'model_failed', message: '400 bad request', retryable: false });
      normal.push(edgeResponse(state.step, choice));
      normal.push({
        type: 'model_failed',
        message: choice % 2 === 0 ? '400 prompt is too long' : 'stream dropped',
        retryable: true,
        failureClass: choice % 2 === 0 ? 'context_window' : 'transient',
        usage: { inputTokens: choice % 3 === 0 ? 2_100 : 700, outputTokens: 120, costUsd: 0.25, estimated: true },
      });
      normal.push({ type: 'steer', text: 'also check the tests' });
      break;
    case 'retry_wait':
      normal.push({ type: 'timer_fired', timerId: state.timerId }, { type: 'timer_fired', timerId: 'retry:stale' }, { type: 'steer', text: 'hurry' });
      break;
    case 'executing_tools':
      for (const call of state.calls) {
        const to = (event: ToolCallEvent): TurnEvent => ({ type: 'tool', callId: call.callId, event });
        switch (call.status) {
          case 'pending':
            normal.push(to({ type: 'policy_decided', decision: 'allow' }), to({ type: 'policy_decided', decision: 'ask' }));
            if (choice % 2 === 0) normal.push(to({ type: 'policy_decided', decision: 'deny', reason: 'rule' }));
            break;
          case 'awaiting_approval':
            normal.push(to({ type: 'approved', approver: 'ann' }), to({ type: 'denied', reason: 'no' }));
            if (call.timerId !== null) normal.push({ type: 'timer_fired', timerId: call.timerId });
            break;
          case 'running':
            if (call.kind === 'ask') normal.push({ type: 'answer', callId: call.callId, text: 'src/a.ts' });
            else normal.push(to({ type: 'succeeded', output: 'ok' }), to({ type: 'failed', error: 'boom' }), to({ type: 'timed_out' }), to({ type: 'limit_hit', message: 'limit' }));
            break;
          case 'queued':
            normal.push(to({ type: 'permit_granted' }));
            break;
          case 'succeeded':
          case 'failed':
          case 'timed_out':
          case 'limit':
          case 'cancelled':
          case 'denied':
            normal.push(to({ type: 'succeeded', output: 'late' }));
            break;
        }
        // A question ends by its answer or by interrupting the turn, never on its own.
        if (call.kind === 'tool') disruptive.push(to({ type: 'cancel', reason: 'one call cancelled' }));
      }
      normal.push({ type: 'steer', text: 'use the new API' }, { type: 'tool', callId: 'unknown', event: { type: 'succeeded', output: 'x' } });
      break;
    case 'completed':
    case 'interrupted':
    case 'failed':
      normal.push({ type: 'start', text: 'again' }, modelResponse(turnId, 9, choice), { type: 'steer', text: 'late' });
      break;
  }
  return { normal, disruptive };
}

export const turnCandidates = (state: TurnState, choice: number): TurnEvent => {
  const { normal, disruptive } = turnEvents(state, choice);
  return pick(choice, normal, disruptive);
};

// ---------------------------------------------------------------- session (with its turns)

export function newSession(variant: number): SessionState {
  const presets = [
    {},
    { inputTokens: 3_000, turns: 4, stepsPerTurn: 3 },
    { costUsd: 2, outputTokens: 1_500, wallClockMs: 60_000 },
    { turns: 2, stepsPerTurn: 1 },
    // Spent before it starts: initialization ends suspended.
    { inputTokens: 0 },
  ];
  return createSession({
    sessionId: 's1',
    at: 0,
    limits: presets[variant % presets.length],
    maxConsecutiveErrors: 2,
    idleTimeoutMs: variant % 2 === 0 ? 600_000 : null,
  }).state;
}

export function sessionEvents(state: SessionState, choice: number): { normal: SessionEvent[]; disruptive: SessionEvent[] } {
  const normal: SessionEvent[] = [{ type: 'user_message', messageId: `m${state.turnSeq}-${state.queue.length}-${choice}`, text: 'please fix the bug' }];
  const disruptive: SessionEvent[] = [{ type: 'close', reason: 'done' }, { type: 'stop' }, { type: 'init_failed', error: 'no workspace', ...(choice % 4 === 0 ? { suspend: true as const } : {}) }];
  if (state.status === 'processing') normal.push({ type: 'pause' }, { type: 'pause' });
  normal.push({ type: 'pause' }, { type: 'resume' }, { type: 'reset' }, { type: 'restart' }, { type: 'interrupt' }, { type: 'steer', text: 'focus on tests' });
  normal.push({ type: 'answer', text: 'yes' }, { type: 'initialized' }, { type: 'cleanup_done' });
  normal.push({ type: 'raise_budget', limits: { inputTokens: 50_000, costUsd: 20, turns: 50, outputTokens: null }, at: 1_000 });
  if (choice % 5 === 0) normal.push({ type: 'raise_budget', limits: { wallClockMs: 120_000 }, at: 30_000 });
  if (state.idleTimerId !== null) normal.push({ type: 'timer_fired', timerId: state.idleTimerId });
  if (state.deadlineTimerId !== null && Math.floor(choice / 11) % 3 === 0) normal.push({ type: 'timer_fired', timerId: state.deadlineTimerId });
  normal.push({ type: 'timer_fired', timerId: 'idle-0' });
  // An interrupted call's connection closed: sometimes more than a budget has left.
  if (choice % 4 === 1) normal.push({ type: 'call_settled', turnId: `t${state.turnSeq}`, callId: `model:t${state.turnSeq}:1:1`, usage: { inputTokens: choice % 3 === 0 ? 5_000 : 0, outputTokens: choice % 3 === 0 ? 2_000 : 12, costUsd: choice % 3 === 0 ? 3 : 0.001, estimated: true } });
  return { normal, disruptive };
}

// ---------------------------------------------------------------- autonomy

export function newGoal(variant: number): GoalState {
  return createGoal({
    goalId: 'g1',
    goal: 'make the tests pass',
    autoApprove: variant % 2 === 1,
    // Goals from before follow-ups needed approval (variant % 5 === 4) still run them at once.
    followUpsNeedApproval: variant % 5 !== 4,
    maxConcurrency: 1 + (variant % 3),
    maxTaskAttempts: 1 + (variant % 2),
    maxPlanAttempts: 2,
    maxReviewCycles: 2,
    planApprovalTimeoutMs: variant % 3 === 0 ? 60_000 : null,
    limits:
      variant % 4 === 2
        ? { inputTokens: variant % 8 === 6 ? 600 : 2_000, costUsd: 3, wallClockMs: 3_600_000 }
        : variant % 4 === 0
          ? { wallClockMs: 3_600_000 }
          : {},
  }).state;
}

const PLANS: readonly (readonly TaskInput[])[] = [
  [
    { id: 'a', title: 'read', instructions: 'read the code', priority: 1 },
    { id: 'b', title: 'test', instructions: 'write a test', priority: 2 },
    { id: 'c', title: 'fix', instructions: 'fix it', dependencies: ['a', 'b'], role: 'coder' },
  ],
  [{ id: 'x', title: 'only', instructions: 'do it' }],
  [
    { id: 'p', title: 'one', instructions: '1' },
    { id: 'q', title: 'two', instructions: '2', dependencies: ['p'] },
    { id: 'r', title: 'three', instructions: '3', dependencies: ['q'] },
    { id: 's', title: 'side', instructions: 's', priority: 5 },
  ],
  // Invalid: a cycle and an unknown dependency.
  [
    { id: 'a', title: 'a', instructions: '', dependencies: ['b'] },
    { id: 'b', title: 'b', instructions: '', dependencies: ['a', 'zzz'] },
  ],
];

export function goalEvents(state: GoalState, choice: number): { normal: GoalEvent[]; disruptive: GoalEvent[] } {
  const usage = { inputTokens: 400, outputTokens: 100, costUsd: 0.25 };
  const disruptive: GoalEvent[] = [{ type: 'cancel', reason: 'user gave up' }, { type: 'model_failed', error: 'overloaded' }];
  // A couple of events that are wrong in most states, so refusals are exercised too.
  const normal: GoalEvent[] = [
    choice % 2 === 0 ? { type: 'approve_plan' } : { type: 'decompose' },
    { type: 'task_finished', taskId: 'nope', attempt: 1, outcome: 'succeeded' },
  ];
  if (Math.floor(choice / 7) % 3 === 0) normal.push({ type: 'usage_reported', usage: { inputTokens: 700, outputTokens: 80, costUsd: 0.125, unpricedCalls: 0 } });
  if (Math.floor(choice / 13) % 5 === 0) normal.push({ type: 'timer_fired', timerId: 'stale' });
  if (state.deadlineTimerId !== null && Math.floor(choice / 11) % 3 === 0) normal.push({ type: 'timer_fired', timerId: state.deadlineTimerId });
  switch (state.status) {
    case 'goal_received': {
      normal.push({ type: 'decompose' });
      // A fork's start (machines/goal-fork.ts): some tasks kept, all of them, or an invalid plan.
      const tasks = [...(PLANS[choice % PLANS.length] ?? [])];
      const keep = choice % 3 === 0 ? tasks : tasks.slice(0, 1);
      const kept = keep.map((t) => ({ taskId: t.id, attempt: 1, agentId: `g0/task-${t.id}/1`, status: 'succeeded' as const, result: `${t.id} done`, evidence: [], usage: null }));
      normal.push({ type: 'forked', tasks, kept, planVersion: 1 + (choice % 3), from: 'forked from g0 after task a' });
      break;
    }
    case 'planning':
      normal.push({ type: 'plan_proposed', tasks: [...(PLANS[choice % PLANS.length] ?? [])], usage });
      if (choice % 20 === 9) normal.push({ type: 'advisor_retry_scheduled', advisor: 'planner', attempt: 2, delayMs: 1_000, reason: 'overloaded_error: Overloaded' });
      break;
    case 'awaiting_plan_approval':
      normal.push({ type: 'approve_plan' }, { type: 'approve_plan' }, { type: 'reject_plan', feedback: 'smaller steps' });
      if (state.approvalTimerId !== null) normal.push({ type: 'timer_fired', timerId: state.approvalTimerId });
      break;
    case 'reviewing':
      normal.push({ type: 'review_done', verdict: 'pass', findings: 'all good', usage });
      // The critic's retry while it reviews, and a planner's retry that is not the one at work (refused).
      if (choice % 20 === 9) normal.push({ type: 'advisor_retry_scheduled', advisor: choice % 16 === 5 ? 'critic' : 'planner', attempt: 3, delayMs: 2_000, reason: 'api_error: Internal server error' });
      normal.push({
        type: 'review_done',
        verdict: 'follow_up',
        findings: 'missing docs',
        tasks: [{ id: `f${state.planVersion}-${state.tasks.length}`, title: 'docs', instructions: 'write docs', dependencies: state.tasks.slice(0, 1).map((t) => t.id) }],
      });
      normal.push({ type: 'review_done', verdict: 'replan', findings: 'wrong approach' });
      break;
    case 'executing':
    case 'blocked':
      for (const t of state.tasks) {
        if (t.status === 'running') {
          normal.push({ type: 'task_started', taskId: t.id, attempt: t.attempts });
          normal.push({ type: 'task_finished', taskId: t.id, attempt: t.attempts, outcome: 'succeeded', result: `${t.id} done`, evidence: ['npm test: exit 0'], usage: { ...usage, unpricedCalls: 0 } });
          normal.push({ type: 'task_finished', taskId: t.id, attempt: t.attempts, outcome: choice % 3 === 0 ? 'succeeded' : 'failed', result: 'exit 1' });
        }
        if (t.status === 'failed') {
          const action = (['retry', 'skip', 'edit'] as const)[choice % 3] ?? 'retry';
          normal.push({ type: 'resolve_task', taskId: t.id, action, ...(action === 'edit' ? { instructions: 'try again differently' } : {}) });
        }
      }
      break;
    case 'goal_met':
    case 'stopped':
      normal.push({ type: 'review_done', verdict: 'pass', findings: 'late' });
      break;
  }
  return { normal, disruptive };
}

export const goalCandidates = (state: GoalState, choice: number): GoalEvent => {
  const { normal, disruptive } = goalEvents(state, choice);
  return pick(choice, normal, disruptive, 40);
};

// ---------------------------------------------------------------- stream

export const newStream = (): StreamState => createStream(3);

export const streamCandidates = (_state: StreamState, choice: number): StreamEvent =>
  pick<StreamEvent>(
    choice,
    [{ type: 'connect' }, { type: 'connected' }, { type: 'start_streaming' }, { type: 'data', bytes: 100 + (choice % 50) }, { type: 'data', bytes: 7 }, { type: 'complete' }, { type: 'reconnect' }],
    [{ type: 'error', message: 'socket hang up' }, { type: 'disconnect' }],
  );

export type AnyMachine = Machine<{ status: string }, { type: string }, unknown>;
