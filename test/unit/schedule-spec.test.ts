// A schedule's spec as the SDK, CLI and API take it (workflows/protocol/schedule.ts): a bad cron
// line, an unknown time zone, a bad duration or calendar field is refused with a reason that
// names it; and the months a monthly budget counts in (shared/month-window.ts).
import { describe, expect, it } from 'vitest';
import { backfillSchema, cronProblem, scheduleSpecSchema, scheduleUpdateSchema } from '../../workflows/protocol/schedule';
import { describeIssues } from '../../workflows/payloads';
import { monthWindow } from '../../shared/month-window';

const problems = (input: unknown) => {
  const r = scheduleSpecSchema.safeParse(input);
  return r.success ? [] : describeIssues(r.error.issues);
};

describe('schedule spec', () => {
  it('takes cron, interval and calendar specs, with defaults', () => {
    expect(scheduleSpecSchema.parse({ when: { kind: 'cron', cron: ' 0 7 * * 1-5 ' } })).toEqual({
      when: { kind: 'cron', cron: '0 7 * * 1-5' },
      timeZone: 'UTC',
      overlap: 'skip',
      catchupWindow: 3_600_000,
      whenBudgetSpent: 'end_runs',
    });
    expect(scheduleSpecSchema.parse({ when: { kind: 'cron', cron: '@daily' }, timeZone: 'Europe/Paris', monthlyBudgetUsd: 2 })).toMatchObject({ timeZone: 'Europe/Paris', monthlyBudgetUsd: 2 });
    expect(scheduleSpecSchema.parse({ when: { kind: 'interval', every: '15m', offset: '30s' }, catchupWindow: '10m' })).toMatchObject({ when: { every: 900_000, offset: 30_000 }, catchupWindow: 600_000 });
    expect(scheduleSpecSchema.parse({ when: { kind: 'calendar', at: [{ hour: 7, dayOfWeek: [{ start: 1, end: 5 }] }] }, overlap: 'buffer_one' }).overlap).toBe('buffer_one');
  });

  it('refuses a bad cron line, naming what is wrong', () => {
    expect(cronProblem('0 7 * * 1-5')).toBeNull();
    expect(cronProblem('61 * * * *')).toBe('cron "61 * * * *": Invalid value for minute: 61');
    expect(cronProblem('* * *')).toMatch(/five fields .* not 3/);
    // Six fields mean seconds first to most tools and years last to Temporal: refused rather than read one way.
    expect(cronProblem('0 0 7 * * 1')).toMatch(/five fields .* not 6/);
    expect(problems({ when: { kind: 'cron', cron: '0 25 * * *' } })).toEqual(['when.cron: cron "0 25 * * *": Invalid value for hour: 25']);
  });

  it('refuses an unknown time zone', () => {
    expect(problems({ when: { kind: 'cron', cron: '@hourly' }, timeZone: 'Mars/Olympus_Mons' })).toEqual(['timeZone: unknown time zone "Mars/Olympus_Mons": an IANA name such as UTC, Europe/Paris or America/New_York']);
  });

  it('refuses bad durations, overlap policies, calendar fields and budgets', () => {
    expect(problems({ when: { kind: 'interval', every: '5 minutes' } })[0]).toMatch(/^when.every: .*a duration/);
    expect(problems({ when: { kind: 'interval', every: '500ms' } })).toEqual(['when.every: every: whole seconds, at least 1s']);
    expect(problems({ when: { kind: 'cron', cron: '@daily' }, catchupWindow: '5s' })).toEqual(["catchupWindow: catchupWindow: at least 10s (Temporal's minimum)"]);
    expect(problems({ when: { kind: 'cron', cron: '@daily' }, overlap: 'buffer_all' })[0]).toMatch(/^overlap: /);
    expect(problems({ when: { kind: 'calendar', at: [{ hour: 24 }] } })[0]).toMatch(/hour: 0 to 23/);
    expect(problems({ when: { kind: 'calendar', at: [{ dayOfMonth: [{ start: 10, end: 5 }] }] } })[0]).toMatch(/end is not before its start/);
    expect(problems({ when: { kind: 'calendar', at: [] } })).toHaveLength(1);
    // Temporal keeps a range's step as a 32-bit integer: schemathesis's 9007199254740990 was a 500.
    expect(problems({ when: { kind: 'calendar', at: [{ year: [{ start: 2000, end: 2000, step: 9007199254740990 }] }] } })[0]).toMatch(/year: a step of at most 101/);
    // Temporal's SDK takes years 2000 to 2100 only: 2998 was a 500 (schemathesis).
    expect(problems({ when: { kind: 'calendar', at: [{ year: [{ start: 2000, end: 2998 }] }] } })[0]).toMatch(/year: 2000 to 2100/);
    expect(problems({ when: { kind: 'calendar', at: [{ minute: [{ start: 0, end: 59, step: 60 }] }] } })).toEqual([]);
    expect(problems({ when: { kind: 'cron', cron: '@daily' }, monthlyBudgetUsd: 0 })[0]).toMatch(/^monthlyBudgetUsd: /);
    expect(problems({ when: { kind: 'weekly' } })[0]).toMatch(/^when.kind: /);
  });

  it('takes a backfill range only forwards', () => {
    expect(backfillSchema.safeParse({ from: '2026-11-01T00:00:00Z', to: '2026-11-02T00:00:00+01:00' }).success).toBe(true);
    expect(backfillSchema.safeParse({ from: '2026-11-02T00:00:00Z', to: '2026-11-01T00:00:00Z' }).success).toBe(false);
    expect(backfillSchema.safeParse({ from: 'yesterday', to: '2026-11-01T00:00:00Z' }).success).toBe(false);
  });
});

describe('month window', () => {
  it('is the calendar month in the schedule\'s zone', () => {
    // 23:30 UTC on 31 October is already 1 November in Paris (UTC+1 in winter).
    const paris = monthWindow(Date.parse('2026-10-31T23:30:00Z'), 'Europe/Paris');
    expect(paris.month).toBe('2026-11');
    expect(paris.start.toISOString()).toBe('2026-10-31T23:00:00.000Z');
    expect(paris.end.toISOString()).toBe('2026-11-30T23:00:00.000Z');
    expect(monthWindow(Date.parse('2026-10-31T23:30:00Z'), 'UTC').month).toBe('2026-10');
  });

  it('begins at local midnight across a clock change and a year end', () => {
    // Paris changes to summer time on 29 March 2026: April begins at 22:00 UTC on 31 March.
    const april = monthWindow(Date.parse('2026-04-15T12:00:00Z'), 'Europe/Paris');
    expect(april.start.toISOString()).toBe('2026-03-31T22:00:00.000Z');
    expect(april.end.toISOString()).toBe('2026-04-30T22:00:00.000Z');
    const december = monthWindow(Date.parse('2026-12-31T12:00:00Z'), 'America/New_York');
    expect(december).toMatchObject({ month: '2026-12' });
    expect(december.end.toISOString()).toBe('2027-01-01T05:00:00.000Z');
    expect(monthWindow(Date.parse('2026-06-30T13:00:00Z'), 'Pacific/Auckland').month).toBe('2026-07');
  });

  it('takes a change to a schedule: any of its fields, null removes the monthly budget, nothing is refused', () => {
    expect(scheduleUpdateSchema.parse({ catchupWindow: '5m', monthlyBudgetUsd: null, goal: ' Triage ' })).toEqual({ catchupWindow: 300_000, monthlyBudgetUsd: null, goal: 'Triage' });
    const none = scheduleUpdateSchema.safeParse({});
    expect(none.success ? [] : describeIssues(none.error.issues)).toEqual([expect.stringMatching(/nothing to change/)]);
    const bad = scheduleUpdateSchema.safeParse({ when: { kind: 'cron', cron: '61 * * * *' }, timeZone: 'Mars/Base', extra: 1 });
    expect(bad.success ? [] : describeIssues(bad.error.issues)).toHaveLength(3);
  });
});
