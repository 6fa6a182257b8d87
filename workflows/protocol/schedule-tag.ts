// What a goal started by a Keel schedule carries in its options (GoalOptions.schedule): which
// schedule it belongs to and that schedule's monthly budget, so the run can check the spend of
// the schedule's runs this month before it calls any model (workflows/schedule-gate.ts). Its
// own module, apart from ./schedule.ts: the goal workflow imports this one, and the schedule's
// spec validation (a cron parser, the time-zone database) has no place in the workflow bundle.
import { z } from 'zod';
import { lazySchema } from '../../machines/lazy-schema';

/** A schedule id: it names the Temporal schedule and prefixes its runs' workflow ids. */
export const SCHEDULE_ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$';
export const scheduleIdSchema = lazySchema(() => z.string().regex(new RegExp(SCHEDULE_ID_PATTERN), 'a schedule id: 1-100 of A-Z a-z 0-9 . _ - (starting with a letter or digit)'));

/** When the month's budget is spent: each further run ends at once (and runs again next month), or the schedule is also paused with a note (a human resumes it). */
export const WHEN_BUDGET_SPENT = ['end_runs', 'pause'] as const;

export const scheduleTagSchema = lazySchema(() =>
  z.strictObject({
    /** The schedule's id. */
    id: scheduleIdSchema,
    /** What the schedule's runs may spend in a calendar month of `timeZone`, in USD; null: no monthly budget. */
    monthlyBudgetUsd: z.number().positive().max(1_000_000).nullable(),
    /** The schedule's time zone (IANA name): its months begin at midnight there. */
    timeZone: z.string().min(1).max(100),
    whenBudgetSpent: z.enum(WHEN_BUDGET_SPENT),
  }),
);
export type ScheduleTag = z.output<typeof scheduleTagSchema>;
