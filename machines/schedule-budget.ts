// The monthly budget of a scheduled goal (docs/schedules.md): what the schedule's runs spent
// this month decides whether the next run may call a model. Pure: the runs' costs and the
// month arrive as data (activities/schedule-budget.ts reads them from the runs' own reports).

/** One run of the schedule this month: its cost, or null when it is not known (a run that failed or was terminated leaves no report). */
export interface ScheduleRunSpend {
  workflowId: string;
  costUsd: number | null;
}

export type WhenBudgetSpent = 'end_runs' | 'pause';

export interface ScheduleBudgetInput {
  /** The schedule's monthly budget; null: none. */
  budgetUsd: number | null;
  /** The schedule's other runs started this month (not the one asking). */
  runs: readonly ScheduleRunSpend[];
  /** The month, `YYYY-MM` in the schedule's time zone. */
  month: string;
  whenBudgetSpent: WhenBudgetSpent;
}

interface Spend {
  spentUsd: number;
  budgetUsd: number | null;
  /** Runs whose cost is not known (counted as 0). */
  unknownRuns: number;
  month: string;
}

export type ScheduleBudgetDecision =
  | (Spend & {
      decision: 'run';
      /** What this run may spend before the month's budget is gone; null: no budget. */
      remainingUsd: number | null;
    })
  | (Spend & {
      decision: 'spent';
      /** The outcome the run ends with, in words. */
      reason: string;
      /** Also pause the schedule, with this note. */
      pauseNote: string | null;
    });

/** What the runs spent, in USD (a run of unknown cost adds nothing). */
export function spentUsd(runs: readonly ScheduleRunSpend[]): number {
  return runs.reduce((sum, r) => sum + (r.costUsd ?? 0), 0);
}

/** Whether a run of the schedule may start its work, and with how much of the month's budget. */
export function scheduleBudgetDecision(input: ScheduleBudgetInput): ScheduleBudgetDecision {
  const spent = spentUsd(input.runs);
  const spend: Spend = { spentUsd: spent, budgetUsd: input.budgetUsd, unknownRuns: input.runs.filter((r) => r.costUsd === null).length, month: input.month };
  if (input.budgetUsd === null) return { ...spend, decision: 'run', remainingUsd: null };
  if (spent < input.budgetUsd) return { ...spend, decision: 'run', remainingUsd: input.budgetUsd - spent };
  const reason = `schedule budget spent: ${usd(spent)} of ${usd(input.budgetUsd)} in ${input.month} (${input.runs.length} run${input.runs.length === 1 ? '' : 's'})`;
  switch (input.whenBudgetSpent) {
    case 'end_runs':
      return { ...spend, decision: 'spent', reason: `${reason}; runs start again on ${nextMonthStart(input.month)}`, pauseNote: null };
    case 'pause':
      return { ...spend, decision: 'spent', reason: `${reason}; the schedule is paused`, pauseNote: `${reason}: paused until resumed` };
    default: {
      const never: never = input.whenBudgetSpent;
      throw new Error(`unknown whenBudgetSpent ${String(never)}`);
    }
  }
}

/** Dollars as people read them: cents from a dollar up, four places below. */
export function usd(amount: number): string {
  return `$${amount >= 1 || amount === 0 ? amount.toFixed(2) : amount.toFixed(4)}`;
}

/** The first day of the month after `YYYY-MM`, as `YYYY-MM-01`. */
export function nextMonthStart(month: string): string {
  const match = /^(\d{4})-(\d{2})$/.exec(month);
  if (!match) throw new Error(`not a month: ${month}`);
  const year = Number(match[1]);
  const m = Number(match[2]);
  return m === 12 ? `${year + 1}-01-01` : `${year}-${String(m + 1).padStart(2, '0')}-01`;
}

/** A run's own cost limit, no more than what is left of the month's budget (a run may not spend next runs' share). */
export function withinMonthlyBudget<L extends { costUsd?: number | null | undefined }>(limits: L, decision: ScheduleBudgetDecision): L {
  if (decision.decision !== 'run' || decision.remainingUsd === null) return limits;
  const own = limits.costUsd ?? null;
  return { ...limits, costUsd: own === null ? decision.remainingUsd : Math.min(own, decision.remainingUsd) };
}
