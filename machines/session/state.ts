// What a session holds: its config, budgets spent, the message queue, the turn in flight,
// its timers; and the first state (`createSession`).
import { z } from 'zod';
import { budgetLimitsSchema, exhaustionSchema, NO_LIMITS, usageSchema, ZERO_USAGE, type BudgetLimits } from '../budget';
import { type Step } from '../core';
import { startTimer } from '../directives';
import { emit } from '../events';
import { toolStatsSchema, ZERO_TOOL_STATS } from '../turn';
import { type SessionDirective } from './protocol';
import { lazySchema, once } from '../lazy-schema';

export const DEFAULT_MAX_CONSECUTIVE_ERRORS = 3;
/** The pause reason of a session stopped before its tools were loaded (initialization still pending). */
export const STOPPED_INITIALIZING = 'stopped while initializing';

const queuedSchema = lazySchema(() => z.strictObject({ messageId: z.string(), text: z.string() }));

const common = once(() => ({
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
}));

export const sessionStateSchema = lazySchema(() => z.discriminatedUnion('status', [
  z.strictObject({ status: z.literal('initializing'), ...common() }),
  z.strictObject({ status: z.literal('active'), ...common() }),
  z.strictObject({ status: z.literal('processing'), ...common() }),
  z.strictObject({ status: z.literal('awaiting_input'), ...common() }),
  z.strictObject({ status: z.literal('paused'), ...common(), reason: z.string() }),
  z.strictObject({
    status: z.literal('suspended'),
    ...common(),
    reason: z.enum(['budget', 'error_threshold', 'setup']),
    exhaustion: exhaustionSchema.nullable(),
    /** Why setup failed (reason `setup`): what a human fixes before `restart`. */
    error: z.string().optional(),
  }),
  z.strictObject({ status: z.literal('closing'), ...common(), reason: z.string() }),
  z.strictObject({ status: z.literal('closed'), ...common(), reason: z.string() }),
  z.strictObject({ status: z.literal('failed'), ...common(), error: z.string() }),
]));
export type SessionState = z.infer<typeof sessionStateSchema>;
export type SessionStatus = SessionState['status'];

export interface NewSession {
  readonly sessionId: string;
  /** Creation time in ms since the epoch (the workflow's deterministic clock). */
  readonly at: number;
  readonly limits?: Partial<BudgetLimits>;
  readonly maxConsecutiveErrors?: number;
  readonly idleTimeoutMs?: number | null;
}

export type D = SessionDirective;
export type Out = Step<SessionState, D>;
export type Common = Omit<Extract<SessionState, { status: 'active' }>, 'status'>;

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

export function commonOf(s: SessionState): Common {
  const { sessionId, config, usage, turns, toolCalls, queue, turnId, turnSeq, errorStreak, idleTimerId, deadlineTimerId, timerSeq, clockExpired, question } = s;
  return { sessionId, config, usage, turns, toolCalls, queue, turnId, turnSeq, errorStreak, idleTimerId, deadlineTimerId, timerSeq, clockExpired, question };
}
