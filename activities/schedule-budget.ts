// The monthly budget check of a scheduled goal's run (workflows/schedule-gate.ts): the spend of
// the schedule's other runs this month, read from Temporal (shared/schedule-runs.ts), decided by
// machines/schedule-budget.ts; and, when the schedule says so, the schedule paused with a note.
import { Context } from '@temporalio/activity';
import { ScheduleNotFoundError } from '@temporalio/client';
import { scheduleBudgetDecision, type ScheduleBudgetDecision } from '../machines/schedule-budget';
import { monthWindow } from '../shared/month-window';
import { scheduleRuns } from '../shared/schedule-runs';
import type { ScheduleTag } from '../workflows/protocol/schedule-tag';

export interface ScheduleBudgetGateInput {
  schedule: ScheduleTag;
  /** When the run started (workflow time, ms): the month it counts in. */
  at: number;
}

export function createScheduleActivities() {
  return {
    async scheduleBudgetGate(input: ScheduleBudgetGateInput): Promise<ScheduleBudgetDecision> {
      const context = Context.current();
      const { schedule } = input;
      const window = monthWindow(input.at, schedule.timeZone);
      const runs =
        schedule.monthlyBudgetUsd === null
          ? []
          : await scheduleRuns(context.client, schedule.id, { since: window.start, ...(context.info.workflowExecution ? { exclude: context.info.workflowExecution.workflowId } : {}) });
      const decision = scheduleBudgetDecision({ budgetUsd: schedule.monthlyBudgetUsd, runs, month: window.month, whenBudgetSpent: schedule.whenBudgetSpent });
      if (decision.decision === 'spent' && decision.pauseNote !== null) {
        // Pausing twice is harmless; a schedule deleted since this run started has nothing to pause.
        await context.client.schedule
          .getHandle(schedule.id)
          .pause(decision.pauseNote)
          .catch((error: unknown) => {
            if (!(error instanceof ScheduleNotFoundError)) throw error;
          });
      }
      return decision;
    },
  };
}
