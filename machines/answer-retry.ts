// The goal's planner and critic must answer through a tool (workflows/planning.ts). Two
// bounded retry rules apply to those calls, both decided here and executed by the goal
// workflow:
//
// 1. A failed call (the model activity failed): another round after the wait in the
//    retry table's `answer` row (machines/model-retry.ts: 12 rounds, 1, 2, 3, 5, 10, 20,
//    then 30 s — or the API's retry-after when longer), only when the failure says it is
//    retryable (overloaded, transient, a lost worker: never malformed output nor fatal
//    errors).
// 2. An answer the goal cannot use (wrong shape, or a review the autonomy machine
//    refuses): the critic is asked again with the problems, up to the goal's
//    maxPlanAttempts answers. (An unusable plan is the autonomy machine's own rule:
//    plan.invalid → request_plan with the errors.)
//
// Whatever happens, what a failed or unusable attempt was billed for is spent: each
// decision returns it, and the workflow reports it to the goal's budget.
import { addCallUsage, ZERO_USAGE, type CallUsage, type Usage } from './budget';
import { maxCallAttempts, retryDecision, type ModelFailureClass } from './model-retry';

/** Rounds of model activity attempts before the planner or critic counts as failed (the table's retries + the first). */
export const ANSWER_ROUNDS = maxCallAttempts('answer');

export interface FailedRound {
  /** From the failure's details (the activity marks every failure non-retryable for Temporal itself). */
  readonly retryable: boolean;
  /** The retry table's row, when the failure says (machines/model-retry.ts). */
  readonly failureClass?: ModelFailureClass | undefined;
  readonly retryAfterMs?: number | undefined;
  /** What the failed attempt was billed for, when known. */
  readonly usage?: CallUsage | undefined;
}

export type RoundDecision = { readonly type: 'retry'; readonly round: number; readonly delayMs: number } | { readonly type: 'give_up' };

/**
 * After round `round` (1-based) failed: wait and call again, or give up. `spent` is null when
 * nothing is known to be billed. `backoffOverride`: the goal's retryBackoffMs (tests), which
 * can only shorten the row's waits (machines/model-retry.ts retryDecision).
 */
export function afterFailedRound(round: number, failure: FailedRound, backoffOverride?: readonly number[]): { spent: Usage | null; next: RoundDecision } {
  const spent = failure.usage !== undefined ? addCallUsage(ZERO_USAGE, failure.usage) : null;
  if (!failure.retryable) return { spent, next: { type: 'give_up' } };
  const decision = retryDecision('answer', failure.failureClass ?? 'transient', round, failure.retryAfterMs, backoffOverride);
  if (!decision.retry) return { spent, next: { type: 'give_up' } };
  return { spent, next: { type: 'retry', round: round + 1, delayMs: decision.delayMs } };
}

export type AnswerDecision =
  | { readonly type: 'ask_again'; readonly attempt: number; readonly errors: readonly string[] }
  | { readonly type: 'give_up'; readonly error: string };

/** After answer `attempt` (1-based) could not be used for `problems`: ask again with them, or give up. The answer's usage is spent either way. */
export function afterUnusableAnswer(attempt: number, maxAnswers: number, problems: readonly string[], usage: CallUsage): { spent: Usage; next: AnswerDecision } {
  const spent = addCallUsage(ZERO_USAGE, usage);
  if (attempt < maxAnswers) return { spent, next: { type: 'ask_again', attempt: attempt + 1, errors: [...problems] } };
  return { spent, next: { type: 'give_up', error: `no usable review after ${attempt} answers: ${problems.join('; ')}` } };
}
