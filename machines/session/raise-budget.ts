// Raising (or lowering) a budget: the deadline timer re-armed, a suspended session resumed
// when budget is left again.
import { type z } from 'zod';
import { applyPatch, type budgetPatchSchema } from '../budget';
import { reject } from '../core';
import { cancelTimer, startTimer } from '../directives';
import { emit } from '../events';
import { type Common, type D, type Out, type SessionState } from './state';
import { exhaustionOf, work } from './work';

export function raiseBudget(state: SessionState, c: Common, patch: z.infer<typeof budgetPatchSchema>, at: number): Out {
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
  if (exhaustion !== null || state.reason !== 'budget') {
    return { state: { ...state, ...next, exhaustion: state.reason === 'budget' ? exhaustion : state.exhaustion }, directives: out };
  }
  out.push(emit('session.unsuspended', { sessionId: c.sessionId, via: 'raise_budget' }));
  return work(next, out);
}
