// A scheduled goal's first step (docs/schedules.md): before any model is called, the spend of
// its schedule's runs this month against the schedule's monthly budget, read through an
// activity (activities/schedule-budget.ts) and decided by machines/schedule-budget.ts. Only a
// goal started by a Keel schedule (GoalOptions.schedule) takes it, so every other goal's
// history is unchanged.
import { proxyActivities } from '@temporalio/workflow';
import type { createScheduleActivities } from '../activities/schedule-budget';
import type { ScheduleBudgetDecision } from '../machines/schedule-budget';
import type { ScheduleTag } from './protocol/schedule-tag';

// Reading the runs is a few visibility and describe calls: a server or worker away is waited out (unlimited attempts, at most a minute apart).
const { scheduleBudgetGate } = proxyActivities<ReturnType<typeof createScheduleActivities>>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});

/** The decision for this run: run (with what is left of the month's budget), or the budget is spent. */
export function scheduleGate(schedule: ScheduleTag): Promise<ScheduleBudgetDecision> {
  return scheduleBudgetGate({ schedule, at: Date.now() });
}
