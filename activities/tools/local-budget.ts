// The budget of a tool call run as a local activity (machines/local-budget.ts), on the
// activities' side: a tool checks it as it scans, and runTool turns a call that ran out into the
// non-retryable failure the workflow answers by running the call as an activity.
import { ApplicationFailure } from '@temporalio/common';
import { LOCAL_BUDGET_EXCEEDED, type LocalBudget } from '../../machines/local-budget';
import { type ToolContext } from './context';

/** Thrown by a tool whose local call would scan more, or take longer, than its budget. */
export class LocalBudgetExceeded extends Error {
  override name = 'LocalBudgetExceeded';
}

/** The budget of a call starting now. */
export function localBudgetFrom(budget: LocalBudget, now = Date.now()): NonNullable<ToolContext['localBudget']> {
  return { bytes: budget.bytes, deadline: now + budget.ms };
}

/** Throws LocalBudgetExceeded when a local call has scanned past its bytes or its time; an activity's call has no budget. */
export function checkLocalBudget(ctx: ToolContext, scannedBytes: number): void {
  const budget = ctx.localBudget;
  if (budget === undefined) return;
  if (scannedBytes > budget.bytes) throw new LocalBudgetExceeded(`more than ${budget.bytes} bytes to scan`);
  if (Date.now() > budget.deadline) throw new LocalBudgetExceeded('past its time');
}

/** The failure a local call ends with when its budget ran out: not retried as a local activity; the workflow runs the call as an activity. */
export function localBudgetFailure(reason: string): ApplicationFailure {
  return ApplicationFailure.create({ type: LOCAL_BUDGET_EXCEEDED, nonRetryable: true, message: `too large for a local read (${reason}): runs as an activity` });
}
