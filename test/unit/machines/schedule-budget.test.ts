// The monthly budget of a scheduled goal (machines/schedule-budget.ts): what the schedule's runs
// spent this month decides whether the next run may call a model, and how much it may spend.
import { describe, expect, it } from 'vitest';
import { nextMonthStart, scheduleBudgetDecision, spentUsd, usd, withinMonthlyBudget } from '../../../machines/schedule-budget';

const run = (workflowId: string, costUsd: number | null) => ({ workflowId, costUsd });

describe('schedule budget', () => {
  it('lets a run start with what is left of the month, and caps its own limit there', () => {
    const d = scheduleBudgetDecision({ budgetUsd: 2, runs: [run('a', 0.5), run('b', 0.25)], month: '2026-11', whenBudgetSpent: 'end_runs' });
    expect(d).toMatchObject({ decision: 'run', spentUsd: 0.75, remainingUsd: 1.25, unknownRuns: 0 });
    expect(withinMonthlyBudget({ costUsd: null, inputTokens: 5 }, d)).toEqual({ costUsd: 1.25, inputTokens: 5 });
    expect(withinMonthlyBudget({ costUsd: 0.5 }, d)).toEqual({ costUsd: 0.5 });
    expect(withinMonthlyBudget({ costUsd: 3 }, d)).toEqual({ costUsd: 1.25 });
  });

  it('ends the run once the month is spent, saying how much, of what, and when runs start again', () => {
    const d = scheduleBudgetDecision({ budgetUsd: 2, runs: [run('a', 1.5), run('b', 0.5)], month: '2026-12', whenBudgetSpent: 'end_runs' });
    expect(d).toMatchObject({ decision: 'spent', pauseNote: null, spentUsd: 2 });
    if (d.decision !== 'spent') throw new Error('spent');
    expect(d.reason).toBe('schedule budget spent: $2.00 of $2.00 in 2026-12 (2 runs); runs start again on 2027-01-01');
    // A spent decision leaves the limits alone: the run does not start its work at all.
    expect(withinMonthlyBudget({ costUsd: 9 }, d)).toEqual({ costUsd: 9 });
  });

  it('pauses the schedule with a note when it says so', () => {
    const d = scheduleBudgetDecision({ budgetUsd: 0.5, runs: [run('a', 0.75)], month: '2026-11', whenBudgetSpent: 'pause' });
    expect(d).toMatchObject({ decision: 'spent', reason: 'schedule budget spent: $0.7500 of $0.5000 in 2026-11 (1 run); the schedule is paused', pauseNote: 'schedule budget spent: $0.7500 of $0.5000 in 2026-11 (1 run): paused until resumed' });
  });

  it('counts a run of unknown cost as nothing, and says how many there were', () => {
    const d = scheduleBudgetDecision({ budgetUsd: 1, runs: [run('a', null), run('b', 0.25)], month: '2026-11', whenBudgetSpent: 'end_runs' });
    expect(d).toMatchObject({ decision: 'run', spentUsd: 0.25, unknownRuns: 1 });
    expect(spentUsd([run('x', null)])).toBe(0);
  });

  it('has no limit without a budget', () => {
    const d = scheduleBudgetDecision({ budgetUsd: null, runs: [run('a', 1000)], month: '2026-11', whenBudgetSpent: 'pause' });
    expect(d).toMatchObject({ decision: 'run', remainingUsd: null, spentUsd: 1000 });
    expect(withinMonthlyBudget({ costUsd: null }, d)).toEqual({ costUsd: null });
  });

  it('formats money and months', () => {
    expect([usd(0), usd(0.0042), usd(1), usd(12.345)]).toEqual(['$0.00', '$0.0042', '$1.00', '$12.35']);
    expect([nextMonthStart('2026-01'), nextMonthStart('2026-12')]).toEqual(['2026-02-01', '2027-01-01']);
    expect(() => nextMonthStart('2026-1')).toThrow(/not a month/);
  });
});
