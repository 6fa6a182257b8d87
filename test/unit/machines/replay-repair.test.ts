// The rules that decide whether a run the SDK cannot replay is the SDK's update-ordering fault
// (reset to before the misordered task) or something a human must look at. The history is the
// one `npm run fleet` seed 4501 left stuck (bench/results/fleet-4501-canary-host-0-history.json).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { failedEventId, type HistoryMark, MAX_REPAIRS_PER_RUN, planReplayRepair, type ReplayRepairPlan } from '../../../machines/replay-repair';
import { historyMarks } from '../../../worker/replay-repair';

const here = path.dirname(fileURLToPath(import.meta.url));
const stuck = JSON.parse(readFileSync(path.join(here, '../../../bench/results/fleet-4501-canary-host-0-history.json'), 'utf8')) as { events: never[] };
const marks = historyMarks(stuck.events);
/** The reason a plan leaves the run to a human; a reset has none. */
const reasonOf = (plan: ReplayRepairPlan) => (plan.kind === 'leave' ? plan.reason : `reset to ${plan.toEventId}`);

describe('replay repair rules', () => {
  it('reads the event a nondeterminism error names', () => {
    expect(failedEventId('[TMPRL1100] Nondeterminism error: Update machine does not handle this event: HistoryEvent(id: 197, ActivityTaskScheduled)')).toBe(197);
    expect(failedEventId('something else')).toBeNull();
  });

  it('the fleet run stuck on the SDK: reset to the retried task that accepted the update (event 196), nothing earlier', () => {
    const plan = planReplayRepair(marks, 197);
    expect(plan).toMatchObject({ kind: 'reset', toEventId: 196 });
    expect(plan.kind === 'reset' && plan.reason).toMatch(/^keel repair: .*event 196.*event 197/);
  });

  it('a task that was not a retry, or accepted no update, is left to a human: the code and history disagree', () => {
    // The same history without the two timed-out tasks before 196: a first try that misordered is not the SDK fault.
    const noTimeouts = marks.map((m): HistoryMark => (m.id === 190 || m.id === 193 ? { ...m, kind: 'other' } : m));
    expect(reasonOf(planReplayRepair(noTimeouts, 197))).toMatch(/not a retry/);
    const noUpdate = marks.map((m): HistoryMark => (m.id === 198 ? { ...m, kind: 'other' } : m));
    expect(reasonOf(planReplayRepair(noUpdate, 197))).toMatch(/accepted no update/);
    // An event that is not a task's command (here the timed-out task's own event).
    expect(planReplayRepair(marks, 193)).toMatchObject({ kind: 'leave' });
    expect(reasonOf(planReplayRepair(marks, 2))).toMatch(/first workflow task/);
  });

  it('a run already repaired too often is left to a human', () => {
    const repaired = [...Array.from({ length: MAX_REPAIRS_PER_RUN }, (_, i): HistoryMark => ({ id: -1 - i, kind: 'repair-reset' })), ...marks];
    expect(reasonOf(planReplayRepair(repaired, 197))).toMatch(/already repaired 5 times/);
    expect(planReplayRepair(repaired.slice(1), 197)).toMatchObject({ kind: 'reset' });
  });
});
