// Where a session goes next: suspend on a spent budget, keep or start a turn, close,
// and the idle timer that runs while it waits for a person.
import { findExhaustion, remainingForTurn, type Exhaustion } from '../budget';
import { cancelTimer, startTimer } from '../directives';
import { emit, type SessionStats } from '../events';
import { type ToolStats, type TurnEvent, type TurnResult } from '../turn';
import { type Common, type D, type Out, type SessionState } from './state';

/** The session's first exhausted budget, if any (for the `usage` query and tests). */
export function exhaustionOf(s: Common): Exhaustion | null {
  return findExhaustion(s.config.limits, { usage: s.usage, turns: s.turns, clockExpired: s.clockExpired });
}

/**
 * A turn that stopped before a call whose worst case could cross a limit (machines/call-ceiling.ts)
 * leaves that limit not quite spent: the session suspends on it all the same, with its own
 * figures, rather than start the next message's turn into the same wall.
 */
export function ceilingHit(s: Common, r: TurnResult): Exhaustion | null {
  const hit = r.outcome === 'budget_exhausted' ? r.exhaustion : null;
  if (hit?.next === undefined) return null;
  const { limits } = s.config;
  const [allowed, used] =
    hit.limit === 'input_tokens' ? [limits.inputTokens, s.usage.inputTokens] : hit.limit === 'output_tokens' ? [limits.outputTokens, s.usage.outputTokens] : hit.limit === 'cost_usd' ? [limits.costUsd, s.usage.costUsd] : [null, 0];
  if (allowed === null) return null;
  return { limit: hit.limit, allowed, used, over: Math.max(0, used - allowed), next: hit.next };
}

/** Turns, tool calls by outcome and usage so far: the workflow's final result. */
export function statsOf(s: Common): SessionStats {
  return { turns: s.turns, toolCalls: s.toolCalls, usage: s.usage };
}

export const forward = (c: Common, event: TurnEvent): D[] => (c.turnId === null ? [] : [{ type: 'forward_to_turn', turnId: c.turnId, event }]);

export function suspend(c: Common, exhaustion: Exhaustion, out: D[]): Out {
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
export function work(c: Common, out: D[]): Out {
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

export function close(c: Common, reason: string, out: D[]): Out {
  const directives: D[] = [...out, emit('session.closing', { sessionId: c.sessionId, reason }), ...forward(c, { type: 'interrupt', reason: `session closing: ${reason}` })];
  if (c.deadlineTimerId !== null) directives.push(cancelTimer(c.deadlineTimerId));
  if (c.turnId === null) directives.push({ type: 'cleanup' });
  return { state: { status: 'closing', ...c, deadlineTimerId: null, reason }, directives };
}

export function addStats(a: ToolStats, b: ToolStats): ToolStats {
  return { success: a.success + b.success, error: a.error + b.error, timeout: a.timeout + b.timeout, limit: a.limit + b.limit, cancelled: a.cancelled + b.cancelled, denied: a.denied + b.denied };
}

/** The idle timer runs while the session waits for a person (no turn working), restarts on
 *  every transition there, and stops when work begins or the session ends. */
export function syncIdleTimer(state: SessionState, directives: readonly D[]): Out {
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
