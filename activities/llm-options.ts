// The ActivityOptions a workflow should schedule `callModel` with. This file imports
// nothing at runtime, so workflow code can bundle it.
import type { ActivityOptions } from '@temporalio/common';

/**
 * - startToCloseTimeout: a long answer streams for minutes; the SDK's own request timeout
 *   is derived from it (10% or 1 s earlier) so the SDK gives up first with a clear error.
 * - heartbeatTimeout: the activity heartbeats twice a second while it runs, and Temporal
 *   delivers a cancel (an interrupt) only in answer to a heartbeat, which the worker
 *   sends at most every 0.8 × this: cancellation reaches the HTTP request in about a
 *   second (measured: under 1.5 s). A worker that dies is noticed as quickly.
 * - retry: bounded (never unlimited). Errors that retrying cannot fix are marked
 *   non-retryable by the activity; 429/529 carry the delay the API asked for.
 * - cancellationType: the workflow learns of the cancel only once the request is closed,
 *   so no tokens of an interrupted answer arrive after the interrupt.
 */
export const MODEL_ACTIVITY_OPTIONS = {
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '1500 ms',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    maximumAttempts: 4,
  },
  cancellationType: 'WAIT_CANCELLATION_COMPLETED',
} as const satisfies ActivityOptions;
