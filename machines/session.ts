// One conversation (seed 000 Session, 002 Session, 003 tmux session, 001's outer loop).
// The session decides when a turn may run — one at a time, messages that arrive
// meanwhile wait in a queue and are never lost — and owns the budgets that outlive a
// turn. It drives the turn machine only through directives (`start_turn`,
// `forward_to_turn`), so the runner holds both states and applies events mechanically.
import { z } from 'zod';
import {
  addUsage,
  applyPatch,
  budgetLimitsSchema,
  budgetPatchSchema,
  exhaustionSchema,
  findExhaustion,
  NO_LIMITS,
  remainingForTurn,
  usageSchema,
  ZERO_USAGE,
  type BudgetLimits,
  type Exhaustion,
  type TurnLimits,
} from './budget';
import { assertNever, defineMachine, reject, type Step } from './core';
import { cancelTimer, startTimer, type CancelTimer, type StartTimer } from './directives';
import { emit, type EmitEvent, type SessionStats } from './events';
import { toolStatsSchema, turnResultSchema, ZERO_TOOL_STATS, type ToolStats, type TurnDirective, type TurnEvent } from './turn';

export const DEFAULT_MAX_CONSECUTIVE_ERRORS = 3;
/** The pause reason of a session stopped before its tools were loaded (initialization still pending). */
export const STOPPED_INITIALIZING = 'stopped while initializing';

const queuedSchema = z.strictObject({ messageId: z.string(), text: z.string() });

const common = {
  sessionId: z.string().min(1),
  config: z.strictObject({
    limits: budgetLimitsSchema,
    /** Failed turns in a row that suspend the session (the error threshold). */
    maxConsecutiveErrors: z.number().int().positive(),
    idleTimeoutMs: z.number().int().positive().nullable(),
    /** When the session was created (ms since the epoch): the wall-clock budget counts from here. */
    startedAt: z.number(),
  }),
  usage: usageSchema,
  turns: z.number().int().nonnegative(),
  toolCalls: toolStatsSchema,
  queue: z.array(queuedSchema),
  /** The turn in flight, if any: at most one (INV-TURN-SEQUENTIAL). */
  turnId: z.string().nullable(),
  turnSeq: z.number().int().nonnegative(),
  errorStreak: z.number().int().nonnegative(),
  idleTimerId: z.string().nullable(),
  deadlineTimerId: z.string().nullable(),
  timerSeq: z.number().int().nonnegative(),
  clockExpired: z.boolean(),
  /** The running turn's question to the human (the ask tool), until it is answered. */
  question: z.strictObject({ callId: z.string(), question: z.string() }).nullable(),
};

export const sessionStateSchema = z.discriminatedUnion('status', [
  z.strictObject({ status: z.literal('initializing'), ...common }),
  z.strictObject({ status: z.literal('active'), ...common }),
  z.strictObject({ status: z.literal('processing'), ...common }),
  z.strictObject({ status: z.literal('awaiting_input'), ...common }),
  z.strictObject({ status: z.literal('paused'), ...common, reason: z.string() }),
  z.strictObject({
    status: z.literal('suspended'),
    ...common,
    reason: z.enum(['budget', 'error_threshold']),
    exhaustion: exhaustionSchema.nullable(),
  }),
  z.strictObject({ status: z.literal('closing'), ...common, reason: z.string() }),
  z.strictObject({ status: z.literal('closed'), ...common, reason: z.string() }),
  z.strictObject({ status: z.literal('failed'), ...common, error: z.string() }),
]);
export type SessionState = z.infer<typeof sessionStateSchema>;
export type SessionStatus = SessionState['status'];

export const sessionEventSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('initialized') }),
  z.strictObject({ type: z.literal('init_failed'), error: z.string() }),
  z.strictObject({ type: z.literal('user_message'), messageId: z.string().min(1), text: z.string().min(1) }),
  z.strictObject({ type: z.literal('turn_finished'), result: turnResultSchema }),
  z.strictObject({ type: z.literal('input_requested'), turnId: z.string(), callId: z.string(), question: z.string() }),
  z.strictObject({ type: z.literal('answer'), text: z.string() }),
  z.strictObject({ type: z.literal('interrupt'), reason: z.string().optional() }),
  z.strictObject({ type: z.literal('steer'), text: z.string().min(1) }),
  z.strictObject({ type: z.literal('pause'), reason: z.string().optional() }),
  z.strictObject({ type: z.literal('resume') }),
  z.strictObject({ type: z.literal('stop') }),
  z.strictObject({ type: z.literal('reset') }),
  z.strictObject({ type: z.literal('restart') }),
  z.strictObject({ type: z.literal('raise_budget'), limits: budgetPatchSchema, at: z.number() }),
  z.strictObject({ type: z.literal('close'), reason: z.string().optional() }),
  z.strictObject({ type: z.literal('cleanup_done') }),
  z.strictObject({ type: z.literal('timer_fired'), timerId: z.string() }),
]);
export type SessionEvent = z.infer<typeof sessionEventSchema>;
export type { SessionStats };

export type SessionDirective =
  | EmitEvent
  | StartTimer
  | CancelTimer
  /** Set up what the session needs (tools, MCP servers); answer `initialized` or `init_failed`. */
  | { readonly type: 'initialize' }
  /** Create a turn (`createTurn({ turnId, limits, … })`) and apply `{ type: 'start', text }` to it. */
  | { readonly type: 'start_turn'; readonly turnId: string; readonly messageId: string; readonly text: string; readonly limits: TurnLimits }
  /** Apply this event to the turn in flight. */
  | { readonly type: 'forward_to_turn'; readonly turnId: string; readonly event: TurnEvent }
  /** Release what the session holds; answer `cleanup_done`. */
  | { readonly type: 'cleanup' }
  /** The workflow may return: the session is over. */
  | { readonly type: 'complete'; readonly outcome: 'closed' | 'failed'; readonly reason: string; readonly stats: SessionStats };

export interface NewSession {
  readonly sessionId: string;
  /** Creation time in ms since the epoch (the workflow's deterministic clock). */
  readonly at: number;
  readonly limits?: Partial<BudgetLimits>;
  readonly maxConsecutiveErrors?: number;
  readonly idleTimeoutMs?: number | null;
}

type D = SessionDirective;
type Out = Step<SessionState, D>;
type Common = Omit<Extract<SessionState, { status: 'active' }>, 'status'>;

/** The session's first state and directives (`[*] → initializing`). */
export function createSession(init: NewSession): { state: SessionState; directives: D[] } {
  const limits: BudgetLimits = { ...NO_LIMITS, ...init.limits };
  const deadlineTimerId = limits.wallClockMs === null ? null : 'deadline-1';
  const state: SessionState = {
    status: 'initializing',
    sessionId: init.sessionId,
    config: {
      limits,
      maxConsecutiveErrors: init.maxConsecutiveErrors ?? DEFAULT_MAX_CONSECUTIVE_ERRORS,
      idleTimeoutMs: init.idleTimeoutMs ?? null,
      startedAt: init.at,
    },
    usage: ZERO_USAGE,
    turns: 0,
    toolCalls: ZERO_TOOL_STATS,
    queue: [],
    turnId: null,
    turnSeq: 0,
    errorStreak: 0,
    idleTimerId: null,
    deadlineTimerId,
    timerSeq: deadlineTimerId === null ? 0 : 1,
    clockExpired: false,
    question: null,
  };
  const directives: D[] = [emit('session.created', { sessionId: init.sessionId }), { type: 'initialize' }];
  if (deadlineTimerId !== null && limits.wallClockMs !== null) directives.push(startTimer(deadlineTimerId, limits.wallClockMs));
  return { state, directives };
}

const S = ['initializing', 'active', 'processing', 'awaiting_input', 'paused', 'suspended', 'closing', 'closed', 'failed'] as const;
const E = [
  'initialized',
  'init_failed',
  'user_message',
  'turn_finished',
  'input_requested',
  'answer',
  'interrupt',
  'steer',
  'pause',
  'resume',
  'stop',
  'reset',
  'restart',
  'raise_budget',
  'close',
  'cleanup_done',
  'timer_fired',
] as const;
type Ev = SessionEvent['type'];
const row = (from: SessionStatus, event: Ev, to: SessionStatus, guard?: string) => (guard === undefined ? { from, event, to } : { from, event, to, guard });
const OPEN = ['initializing', 'active', 'processing', 'awaiting_input', 'paused', 'suspended'] as const;
/** Where work may go on next: a running turn, the next queued message, idle, or suspended. */
const toWork = (from: SessionStatus, event: Ev, guard: string) => [
  row(from, event, 'active', `${guard}; queue empty`),
  row(from, event, 'processing', `${guard}; a turn runs or a message is queued`),
  row(from, event, 'suspended', `${guard}; budget exhausted`),
];

export const sessionMachine = defineMachine<SessionState, SessionEvent, SessionDirective>({
  name: 'session',
  states: S,
  events: E,
  terminal: ['closed', 'failed'],
  table: [
    ...toWork('initializing', 'initialized', 'ready'),
    row('initializing', 'init_failed', 'failed'),
    ...OPEN.filter((s) => s !== 'active').map((s) => row(s, 'user_message', s, 'queued while busy')),
    row('active', 'user_message', 'processing'),
    ...toWork('processing', 'turn_finished', 'this turn'),
    row('processing', 'turn_finished', 'suspended', 'error threshold reached'),
    // The turn can end with its question open (interrupted, cancelled, out of time).
    ...toWork('awaiting_input', 'turn_finished', 'this turn'),
    row('paused', 'turn_finished', 'paused', 'this turn'),
    row('paused', 'turn_finished', 'suspended', 'budget exhausted'),
    row('suspended', 'turn_finished', 'suspended', 'this turn'),
    row('closing', 'turn_finished', 'closing', 'this turn'),
    row('processing', 'input_requested', 'awaiting_input', 'this turn'),
    row('paused', 'input_requested', 'paused', 'the running turn asks'),
    row('awaiting_input', 'answer', 'processing'),
    row('paused', 'answer', 'paused', 'a question is pending'),
    row('processing', 'interrupt', 'processing'),
    row('awaiting_input', 'interrupt', 'processing'),
    row('paused', 'interrupt', 'paused', 'a turn is still running'),
    row('processing', 'steer', 'processing'),
    row('awaiting_input', 'steer', 'awaiting_input'),
    row('paused', 'steer', 'paused', 'a turn is still running'),
    row('active', 'pause', 'paused'),
    row('processing', 'pause', 'paused'),
    ...toWork('paused', 'resume', 'resume').filter((r) => r.to !== 'suspended'),
    ...toWork('suspended', 'resume', 'budget left').filter((r) => r.to !== 'suspended'),
    ...toWork('suspended', 'reset', 'budget left').filter((r) => r.to !== 'suspended'),
    row('suspended', 'restart', 'initializing', 'budget left'),
    // stop from every state that is not terminal (seeds 001, 003): interrupt what runs, and
    // pause where pausing means something; suspended and closing keep their state (resume
    // from a stop must not step over an exhausted budget or undo a close).
    row('initializing', 'stop', 'paused'),
    row('initializing', 'stop', 'suspended', 'budget exhausted'),
    row('active', 'stop', 'paused'),
    row('processing', 'stop', 'paused'),
    row('awaiting_input', 'stop', 'paused'),
    row('paused', 'stop', 'paused'),
    row('suspended', 'stop', 'suspended'),
    row('closing', 'stop', 'closing'),
    row('paused', 'initialized', 'paused', 'stopped while initializing'),
    row('paused', 'init_failed', 'failed', 'stopped while initializing'),
    ...OPEN.map((s) => row(s, 'raise_budget', s, s === 'suspended' ? 'still exhausted, or suspended for errors' : undefined)),
    row('suspended', 'raise_budget', 'active', 'budget left; queue empty'),
    row('suspended', 'raise_budget', 'processing', 'budget left; a turn runs or a message is queued'),
    ...OPEN.map((s) => row(s, 'close', 'closing')),
    row('closing', 'cleanup_done', 'closed', 'no turn in flight'),
    ...(['initializing', 'active', 'processing', 'awaiting_input', 'paused'] as const).map((s) => row(s, 'timer_fired', 'suspended', 'wall-clock deadline')),
    row('suspended', 'timer_fired', 'suspended', 'wall-clock deadline'),
    ...(['active', 'awaiting_input', 'paused', 'suspended'] as const).map((s) => row(s, 'timer_fired', 'closing', 'idle timeout')),
  ],
  stateSchema: sessionStateSchema,
  eventSchema: sessionEventSchema,
  reduce: (state, event) => {
    const step = reduce(state, event);
    return 'reject' in step ? step : syncIdleTimer(step.state, step.directives);
  },
});

function commonOf(s: SessionState): Common {
  const { sessionId, config, usage, turns, toolCalls, queue, turnId, turnSeq, errorStreak, idleTimerId, deadlineTimerId, timerSeq, clockExpired, question } = s;
  return { sessionId, config, usage, turns, toolCalls, queue, turnId, turnSeq, errorStreak, idleTimerId, deadlineTimerId, timerSeq, clockExpired, question };
}

/** The session's first exhausted budget, if any (for the `usage` query and tests). */
export function exhaustionOf(s: Common): Exhaustion | null {
  return findExhaustion(s.config.limits, { usage: s.usage, turns: s.turns, clockExpired: s.clockExpired });
}

/** Turns, tool calls by outcome and usage so far: the workflow's final result. */
export function statsOf(s: Common): SessionStats {
  return { turns: s.turns, toolCalls: s.toolCalls, usage: s.usage };
}

const forward = (c: Common, event: TurnEvent): D[] => (c.turnId === null ? [] : [{ type: 'forward_to_turn', turnId: c.turnId, event }]);

function suspend(c: Common, exhaustion: Exhaustion, out: D[]): Out {
  return {
    state: { status: 'suspended', ...c, reason: 'budget', exhaustion },
    directives: [
      ...out,
      emit('budget.exhausted', { ...exhaustion, scope: `session ${c.sessionId}` }),
      emit('session.suspended', { sessionId: c.sessionId, reason: 'budget', budget: exhaustion, errors: c.errorStreak }),
    ],
  };
}

/** Continue with work: suspend if a budget is spent, else keep the running turn, else start
 *  the next queued message, else wait. */
function work(c: Common, out: D[]): Out {
  const exhaustion = exhaustionOf(c);
  if (exhaustion !== null) return suspend(c, exhaustion, out);
  if (c.turnId !== null) return { state: { status: 'processing', ...c }, directives: out };
  const [next, ...rest] = c.queue;
  if (next === undefined) return { state: { status: 'active', ...c }, directives: out };
  const turnSeq = c.turnSeq + 1;
  const turnId = `${c.sessionId}/turn-${turnSeq}`;
  const started: Common = { ...c, queue: rest, turnSeq, turnId };
  return {
    state: { status: 'processing', ...started },
    directives: [
      ...out,
      { type: 'start_turn', turnId, messageId: next.messageId, text: next.text, limits: remainingForTurn(c.config.limits, c.usage) },
    ],
  };
}

function close(c: Common, reason: string, out: D[]): Out {
  const directives: D[] = [...out, emit('session.closing', { sessionId: c.sessionId, reason }), ...forward(c, { type: 'interrupt', reason: `session closing: ${reason}` })];
  if (c.deadlineTimerId !== null) directives.push(cancelTimer(c.deadlineTimerId));
  if (c.turnId === null) directives.push({ type: 'cleanup' });
  return { state: { status: 'closing', ...c, deadlineTimerId: null, reason }, directives };
}

function reduce(state: SessionState, event: SessionEvent): Out {
  const c = commonOf(state);
  const id = c.sessionId;
  switch (event.type) {
    case 'initialized': {
      const out = [emit('session.activated', { sessionId: id, rootAgentId: `${id}/agent` })];
      // Stopped while the tools were loading: ready, and still paused until resumed.
      if (state.status === 'paused') {
        if (state.reason !== STOPPED_INITIALIZING) return reject('the session is not initializing');
        return { state: { ...state, reason: 'stopped' }, directives: out };
      }
      return work(c, out);
    }
    case 'init_failed':
      if (state.status === 'paused' && state.reason !== STOPPED_INITIALIZING) return reject('the session is not initializing');
      return {
        state: { status: 'failed', ...c, error: event.error },
        directives: [emit('session.failed', { sessionId: id, error: event.error }), { type: 'complete', outcome: 'failed', reason: event.error, stats: statsOf(c) }],
      };
    case 'user_message': {
      const queued: Common = { ...c, queue: [...c.queue, { messageId: event.messageId, text: event.text }] };
      const out = [emit('session.message_received', { sessionId: id, messageId: event.messageId, queued: state.status !== 'active', queueLength: queued.queue.length })];
      if (state.status === 'active') return work(queued, out);
      return { state: { ...state, queue: queued.queue }, directives: out };
    }
    case 'turn_finished': {
      const r = event.result;
      if (c.turnId !== r.turnId) return reject(`turn ${r.turnId} is not the turn in flight (${c.turnId ?? 'none'})`);
      const failed = r.outcome === 'failed';
      const next: Common = {
        ...c,
        turnId: null,
        question: null,
        usage: addUsage(c.usage, r.usage),
        turns: c.turns + 1,
        toolCalls: addStats(c.toolCalls, r.toolCalls),
        errorStreak: failed ? c.errorStreak + 1 : r.outcome === 'interrupted' ? c.errorStreak : 0,
        // A steer the turn could not apply is still the user's message: it goes first.
        queue: [...r.unappliedSteers.map((text, i) => ({ messageId: `${r.turnId}/steer-${i + 1}`, text })), ...c.queue],
      };
      const out: D[] = [emit('session.turn_finished', { sessionId: id, turnId: r.turnId, outcome: r.outcome, queueLength: next.queue.length })];
      switch (state.status) {
        case 'processing':
        case 'awaiting_input': {
          const exhaustion = exhaustionOf(next);
          if (exhaustion !== null) return suspend(next, exhaustion, out);
          if (next.errorStreak >= c.config.maxConsecutiveErrors) {
            return {
              state: { status: 'suspended', ...next, reason: 'error_threshold', exhaustion: null },
              directives: [...out, emit('session.suspended', { sessionId: id, reason: 'error_threshold', budget: null, errors: next.errorStreak })],
            };
          }
          return work(next, out);
        }
        case 'paused': {
          const exhaustion = exhaustionOf(next);
          if (exhaustion !== null) return suspend(next, exhaustion, out);
          return { state: { ...state, ...next }, directives: out };
        }
        case 'suspended':
          return { state: { ...state, ...next }, directives: out };
        case 'closing':
          return { state: { ...state, ...next }, directives: [...out, { type: 'cleanup' }] };
        case 'initializing':
        case 'active':
        case 'closed':
        case 'failed':
          return reject(`no turn can finish in state ${state.status}`);
        default:
          return assertNever(state);
      }
    }
    case 'input_requested': {
      if (c.turnId !== event.turnId) return reject(`turn ${event.turnId} is not the turn in flight`);
      if (c.question !== null) return reject(`question ${c.question.callId} is still unanswered`);
      const asked: Common = { ...c, question: { callId: event.callId, question: event.question } };
      const out = [emit('session.input_requested', { sessionId: id, turnId: event.turnId, callId: event.callId, question: event.question })];
      // A paused session stays paused; the question waits with it.
      return { state: state.status === 'paused' ? { ...state, ...asked } : { status: 'awaiting_input', ...asked }, directives: out };
    }
    case 'answer': {
      if (c.turnId === null || c.question === null) return reject('no question is pending');
      const answered: Common = { ...c, question: null };
      return {
        state: state.status === 'paused' ? { ...state, ...answered } : { status: 'processing', ...answered },
        directives: [
          emit('session.input_received', { sessionId: id, turnId: c.turnId, callId: c.question.callId }),
          ...forward(c, { type: 'answer', callId: c.question.callId, text: event.text }),
        ],
      };
    }
    case 'interrupt': {
      if (c.turnId === null) return reject('no turn is running');
      const reason = event.reason ?? 'interrupted by the user';
      const out = [emit('session.control', { sessionId: id, signal: 'interrupt', turnId: c.turnId }), ...forward(c, { type: 'interrupt', reason })];
      const interrupted: Common = { ...c, question: null };
      return { state: state.status === 'paused' ? { ...state, ...interrupted } : { status: 'processing', ...interrupted }, directives: out };
    }
    case 'steer':
      if (c.turnId === null) return reject('no turn is running to steer; send a message instead');
      return { state, directives: [emit('session.control', { sessionId: id, signal: 'steer', turnId: c.turnId }), ...forward(c, { type: 'steer', text: event.text })] };
    case 'pause': {
      const reason = event.reason ?? 'paused by the user';
      return { state: { status: 'paused', ...c, reason }, directives: [emit('session.paused', { sessionId: id, reason })] };
    }
    case 'stop': {
      const out: D[] = [emit('session.control', { sessionId: id, signal: 'stop', turnId: c.turnId }), ...forward(c, { type: 'interrupt', reason: 'stopped by the user' })];
      if (state.status === 'suspended' || state.status === 'closing') return { state: { ...state, question: null }, directives: out };
      // A session created with nothing to spend is suspended, not paused (a resume could not run anything).
      const spent = state.status === 'initializing' ? exhaustionOf(c) : null;
      if (spent !== null) return suspend(c, spent, out);
      // Stopped while loading its tools: paused, and the pending `initialized` keeps it so.
      const reason = state.status === 'initializing' || (state.status === 'paused' && state.reason === STOPPED_INITIALIZING) ? STOPPED_INITIALIZING : 'stopped';
      out.push(emit('session.paused', { sessionId: id, reason }));
      return { state: { status: 'paused', ...c, question: null, reason }, directives: out };
    }
    case 'resume':
    case 'reset':
    case 'restart': {
      if (state.status === 'paused' && event.type === 'resume') {
        if (state.reason === STOPPED_INITIALIZING) return reject('the session is still loading its tools; resume when it has');
        return work(c, [emit('session.resumed', { sessionId: id })]);
      }
      if (state.status !== 'suspended') return reject('the session is not suspended');
      const exhaustion = exhaustionOf(c);
      if (exhaustion !== null) {
        return reject(`the ${exhaustion.limit} budget is exhausted (${exhaustion.used} of ${exhaustion.allowed}); raise_budget first`);
      }
      const cleared: Common = event.type === 'resume' ? c : { ...c, errorStreak: 0 };
      const out: D[] = [emit('session.unsuspended', { sessionId: id, via: event.type })];
      if (event.type !== 'restart') return work(cleared, out);
      if (c.turnId !== null) return reject('a turn is still finishing; restart when it has');
      return { state: { status: 'initializing', ...cleared }, directives: [...out, emit('session.restarting', { sessionId: id }), { type: 'initialize' }] };
    }
    case 'raise_budget':
      return raiseBudget(state, c, event.limits, event.at);
    case 'close':
      return close(c, event.reason ?? 'requested', []);
    case 'cleanup_done':
      if (c.turnId !== null) return reject('a turn is still finishing');
      return {
        state: { status: 'closed', ...c, reason: state.status === 'closing' ? state.reason : 'requested' },
        directives: [
          emit('session.closed', { sessionId: id, finalStats: statsOf(c) }),
          { type: 'complete', outcome: 'closed', reason: state.status === 'closing' ? state.reason : 'requested', stats: statsOf(c) },
        ],
      };
    case 'timer_fired': {
      if (event.timerId === c.idleTimerId && state.status !== 'initializing' && state.status !== 'processing') {
        return close({ ...c, idleTimerId: null }, 'timeout', []);
      }
      if (event.timerId !== c.deadlineTimerId) return reject(`timer ${event.timerId} is not running`);
      const expired: Common = { ...c, clockExpired: true, deadlineTimerId: null };
      const exhaustion = exhaustionOf(expired);
      if (exhaustion === null) return reject('no wall-clock limit is set');
      const out = forward(c, { type: 'interrupt', reason: 'the wall-clock budget is exhausted' });
      if (state.status === 'suspended') return { state: { ...state, ...expired }, directives: [...out, emit('budget.exhausted', { ...exhaustion, scope: `session ${id}` })] };
      return suspend(expired, exhaustion, out);
    }
    default:
      return assertNever(event);
  }
}

function raiseBudget(state: SessionState, c: Common, patch: z.infer<typeof budgetPatchSchema>, at: number): Out {
  const limits = applyPatch(c.config.limits, patch);
  let next: Common = { ...c, config: { ...c.config, limits } };
  const out: D[] = [emit('session.budget_raised', { sessionId: c.sessionId, limits: patch })];
  if (patch.wallClockMs !== undefined) {
    // The deadline moves: re-arm its timer for what is left from now.
    if (c.deadlineTimerId !== null) out.push(cancelTimer(c.deadlineTimerId));
    const left = limits.wallClockMs === null ? null : c.config.startedAt + limits.wallClockMs - at;
    if (left !== null && left > 0) {
      const timerSeq = next.timerSeq + 1;
      const deadlineTimerId = `deadline-${timerSeq}`;
      next = { ...next, timerSeq, deadlineTimerId, clockExpired: false };
      out.push(startTimer(deadlineTimerId, left));
    } else {
      next = { ...next, deadlineTimerId: null, clockExpired: left !== null };
    }
  }
  if (state.status !== 'suspended') {
    const exhaustion = exhaustionOf(next);
    // Lowering a limit below what is already spent is refused rather than silently exceeded.
    if (exhaustion !== null) {
      return reject(`that would leave the ${exhaustion.limit} budget exhausted (${exhaustion.used} of ${exhaustion.allowed})`);
    }
    return { state: { ...state, ...next }, directives: out };
  }
  const exhaustion = exhaustionOf(next);
  if (exhaustion !== null || state.reason === 'error_threshold') {
    return { state: { ...state, ...next, exhaustion: state.reason === 'budget' ? exhaustion : state.exhaustion }, directives: out };
  }
  out.push(emit('session.unsuspended', { sessionId: c.sessionId, via: 'raise_budget' }));
  return work(next, out);
}

function addStats(a: ToolStats, b: ToolStats): ToolStats {
  return { success: a.success + b.success, error: a.error + b.error, timeout: a.timeout + b.timeout, limit: a.limit + b.limit, cancelled: a.cancelled + b.cancelled, denied: a.denied + b.denied };
}

/** The idle timer runs while the session waits for a person (no turn working), restarts on
 *  every transition there, and stops when work begins or the session ends. */
function syncIdleTimer(state: SessionState, directives: readonly D[]): Out {
  const timeout = state.config.idleTimeoutMs;
  const waiting =
    state.question !== null || ((state.status === 'active' || state.status === 'paused' || state.status === 'suspended') && state.turnId === null);
  const out = [...directives];
  if (state.idleTimerId !== null) out.push(cancelTimer(state.idleTimerId));
  if (!waiting || timeout === null) return { state: { ...state, idleTimerId: null }, directives: out };
  const timerSeq = state.timerSeq + 1;
  const idleTimerId = `idle-${timerSeq}`;
  out.push(startTimer(idleTimerId, timeout));
  return { state: { ...state, timerSeq, idleTimerId }, directives: out };
}

/** The session event that a turn's `finish` or `ask_human` directive stands for, so the
 *  runner can pass turn results up without interpreting them. */
export function sessionEventFromTurn(turnId: string, directive: TurnDirective): SessionEvent | null {
  if (directive.type === 'finish') return { type: 'turn_finished', result: directive.result };
  if (directive.type === 'ask_human') return { type: 'input_requested', turnId, callId: directive.callId, question: directive.question };
  return null;
}
