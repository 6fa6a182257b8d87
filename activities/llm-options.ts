// The ActivityOptions every workflow schedules `callModel` with (the turn runner, the
// goal's planner and critic). This file imports only the retry table at runtime (zod and
// a constant), so workflow code can bundle it.
import type { ActivityOptions } from '@temporalio/common';
import { LOST_ATTEMPT_RETRY } from '../machines/model-retry';

/**
 * - startToCloseTimeout: a long answer streams for minutes; the SDK's own request timeout
 *   is derived from it (10% or 1 s earlier) so the SDK gives up first with a clear error.
 * - heartbeatTimeout: how long without a heartbeat before the server declares the attempt
 *   lost. It is NOT what makes an interrupt fast: a cancel is delivered in answer to a
 *   heartbeat, and the worker sends the activity's twice-a-second heartbeats at least
 *   every `maxHeartbeatThrottleInterval` (50 ms, activities/tools/definitions.ts), so cancel latency
 *   stays under a second whatever this is. It only decides when a silent attempt counts
 *   as dead — and a lost attempt is retried, i.e. paid for again. At 1.5 s any event-loop
 *   stall over 1.5 s (GC, a busy worker, a laptop lid) turned into a second paid call;
 *   10 s tolerates a busy loop and still notices a dead worker within seconds.
 * - retry: callers ask the activity to mark every failure non-retryable for Temporal
 *   (serverRetries 'timeouts_only') and retry by their row of the one table in
 *   machines/model-retry.ts; Temporal retries only an attempt lost with its worker,
 *   once (LOST_ATTEMPT_RETRY there), on the server, with no workflow task in between.
 * - cancellationType: the workflow learns of the cancel only once the request is closed,
 *   so no tokens of an interrupted answer arrive after the interrupt.
 */
export const MODEL_ACTIVITY_OPTIONS = {
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: LOST_ATTEMPT_RETRY.backoffMs, maximumAttempts: LOST_ATTEMPT_RETRY.attempts },
  cancellationType: 'WAIT_CANCELLATION_COMPLETED',
} as const satisfies ActivityOptions;

/** MODEL_ACTIVITY_OPTIONS with a caller's overrides (tests shorten intervals); the attempts stay the table's: two tiers would multiply. */
export function modelActivityOptions(overrides: Partial<ActivityOptions> = {}): ActivityOptions {
  return {
    ...MODEL_ACTIVITY_OPTIONS,
    ...overrides,
    retry: { ...MODEL_ACTIVITY_OPTIONS.retry, ...overrides.retry, maximumAttempts: LOST_ATTEMPT_RETRY.attempts },
  };
}
