// The ActivityOptions a workflow should schedule `callModel` with. This file imports
// nothing at runtime, so workflow code can bundle it.
import type { ActivityOptions } from '@temporalio/common';

/**
 * - startToCloseTimeout: a long answer streams for minutes; the SDK's own request timeout
 *   is derived from it (10% or 1 s earlier) so the SDK gives up first with a clear error.
 * - heartbeatTimeout: how long without a heartbeat before the server declares the attempt
 *   lost. It is NOT what makes an interrupt fast: a cancel is delivered in answer to a
 *   heartbeat, and the worker sends the activity's twice-a-second heartbeats at least
 *   every `maxHeartbeatThrottleInterval` (500 ms, worker/worker.ts), so cancel latency
 *   stays about a second whatever this is. It only decides when a silent attempt counts
 *   as dead — and a lost attempt is retried, i.e. paid for again. At 1.5 s any event-loop
 *   stall over 1.5 s (GC, a busy worker, a laptop lid) turned into a second paid call;
 *   10 s tolerates a busy loop and still notices a dead worker within seconds.
 * - retry: for callers that use the activity's own retries (the goal's planner and
 *   critic): at most 3 retries for the whole call. The turn runner instead has the
 *   activity mark every failure non-retryable (serverRetries 'timeouts_only'), allows 2
 *   attempts so only a lost attempt is retried here, and retries the rest in the turn
 *   machine by the one table in machines/model-retry.ts: the tiers never multiply.
 * - cancellationType: the workflow learns of the cancel only once the request is closed,
 *   so no tokens of an interrupted answer arrive after the interrupt.
 */
export const MODEL_ACTIVITY_OPTIONS = {
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '10 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    maximumAttempts: 4,
    nonRetryableErrorTypes: ['ModelMalformedResponse', 'ModelContextWindowExceeded'],
  },
  cancellationType: 'WAIT_CANCELLATION_COMPLETED',
} as const satisfies ActivityOptions;
