// Overlap policies end to end (`npm run test:e2e -- schedules`), on the dev server with a real
// worker and the model stand-in: a schedule due every few seconds whose goal is slow (each run
// waits for a human to approve its plan). The short checks in npm test
// (test/integration/schedules.test.ts) cover `skip` (runs skipped, not piled up), the monthly
// budget, pause/trigger/backfill/delete from the CLI, the SDK and the API; the console's are in
// test/e2e/schedules-console.test.ts. Here:
// - buffer_one: while a run goes on, one more due run is kept and the rest skipped; the kept one
//   starts as soon as the running one ends — never two at once;
// - cancel_other: each due run cancels the running one, and starts when it has ended.
// Intervals are seconds (no test waits real hours); every wait is on a condition.
import { afterAll, describe, expect, it } from 'vitest';
import { KeelClient } from '../../client/keel-client';
import type { KeelSchedule, ScheduleRun } from '../../client/schedules';
import { agent, critic, finish, goalEnv, plan, planner, review, task, waitUntil } from '../fixtures/goal-harness';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();
const made: string[] = [];

afterAll(async () => {
  for (const id of made) {
    await env.client.schedule.getHandle(id).delete().catch(() => undefined);
    for await (const w of env.client.workflow.list({ query: `TemporalScheduledById = '${id}' AND ExecutionStatus = 'Running'` })) await env.client.workflow.getHandle(w.workflowId).terminate('test over').catch(() => undefined);
  }
});

/** Runs oldest first; each started no earlier than the one before it closed (never two at once). */
function oneAtATime(runs: ScheduleRun[]): void {
  const sorted = [...runs].sort((a, b) => a.startTime.localeCompare(b.startTime));
  for (let i = 1; i < sorted.length; i++) {
    const before = sorted[i - 1]!;
    expect(before.closeTime, `${before.workflowId} still running when ${sorted[i]!.workflowId} started`).not.toBeNull();
    expect(Date.parse(sorted[i]!.startTime), `${sorted[i]!.workflowId} started before ${before.workflowId} ended`).toBeGreaterThanOrEqual(Date.parse(before.closeTime!));
  }
}

/** Deletes the schedule (its buffer goes with it), then ends its last run. */
async function stop(schedule: KeelSchedule): Promise<ScheduleRun[]> {
  await schedule.delete();
  // One may end by itself meanwhile (a cancel the schedule asked for, just before it was deleted).
  for (const r of await schedule.runs()) if (r.execution === 'RUNNING') await env.client.workflow.getHandle(r.workflowId).terminate('test over').catch(() => undefined);
  return waitUntil(() => schedule.runs(), (runs) => runs.every((r) => r.execution !== 'RUNNING'), 20_000, 'every run ended');
}

describe('scheduled goals: overlap policies with a slow goal', () => {
  it('buffer_one keeps one due run and starts it when the running one ends; cancel_other cancels the running one for the new one', async () => {
    const g = await goalEnv(env, workflowBundle, {
      rules: [
        { match: planner(), reply: plan([task('triage', 'Triage the issues', 'List the open issues.')]) },
        { match: agent('triage'), reply: finish('Triaged.') },
        { match: critic(), reply: review('pass', 'Nothing more to do.') },
      ],
    });
    await g.run(async () => {
      const keel = await KeelClient.connect({ client: env.client, taskQueue: g.taskQueue });
      const suffix = g.taskQueue.slice(-8);

      // ---- buffer_one: a run every 2 s; each waits for its plan's approval -------------------------
      const bufferedId = `buffer-${suffix}`;
      made.push(bufferedId);
      const buffered = await keel.schedules.create({ id: bufferedId, when: { kind: 'interval', every: '2s' }, overlap: 'buffer_one', goal: 'Slow triage (buffer one)', goalOptions: { workspace: g.workspace, policy: { mode: 'full-auto' } } });
      // Several due times pass while the first run waits: one is kept, the others skipped.
      const during = await waitUntil(() => buffered.describe(), (d) => (d.actions?.skippedOverlap ?? 0) >= 2, 30_000, 'due runs skipped while one is kept');
      expect(during.actions!.running).toHaveLength(1);
      const [first] = await buffered.runs();
      expect((await buffered.runs()).map((r) => r.workflowId)).toEqual([first!.workflowId]);
      const firstGoal = keel.getGoal(first!.workflowId);
      await waitUntil(() => firstGoal.state(), (s) => s.status === 'awaiting_plan_approval', 20_000, 'the first run waiting for approval');
      // The human approves: the first run ends, and the kept one starts at once (not at the next due time).
      await firstGoal.approvePlan();
      const two = await waitUntil(() => buffered.runs(), (runs) => runs.length === 2 && runs.some((r) => r.workflowId === first!.workflowId && r.execution === 'COMPLETED'), 30_000, 'the kept run starting after the first ended');
      const firstDone = two.find((r) => r.workflowId === first!.workflowId)!;
      const kept = two.find((r) => r.workflowId !== first!.workflowId)!;
      expect(firstDone.verdict).toBe('goal_met');
      // Kept, not made afresh: it was due before the first run ended (its id is its due time).
      const keptDue = Date.parse(kept.workflowId.slice(bufferedId.length + 1));
      expect(keptDue).toBeLessThan(Date.parse(firstDone.closeTime!));
      expect(Date.parse(kept.startTime)).toBeGreaterThanOrEqual(Date.parse(firstDone.closeTime!));
      const bufferedRuns = await stop(buffered);
      oneAtATime(bufferedRuns);
      console.log(`schedules: buffer_one ${bufferedRuns.length} runs, ${(during.actions?.skippedOverlap ?? 0)}+ skipped while the first waited`);

      // ---- cancel_other: a run every 3 s; each due run cancels the one waiting ----------------------------
      const cancelId = `cancel-${suffix}`;
      made.push(cancelId);
      const cancelling = await keel.schedules.create({ id: cancelId, when: { kind: 'interval', every: '3s' }, overlap: 'cancel_other', goal: 'Slow triage (cancel other)', goalOptions: { workspace: g.workspace, policy: { mode: 'full-auto' } } });
      await waitUntil(() => cancelling.runs(), (runs) => runs.length >= 3, 40_000, 'three runs, each cancelling the one before');
      const d = await cancelling.describe();
      expect(d.actions!.skippedOverlap).toBe(0);
      expect(d.actions!.running.length).toBeLessThanOrEqual(1);
      const cancelRuns = await stop(cancelling);
      oneAtATime(cancelRuns);
      const sorted = [...cancelRuns].sort((a, b) => a.startTime.localeCompare(b.startTime));
      // Every run but the last was cancelled by the next one (the last one the test ended, or the schedule's last cancel): a goal
      // cancelled through Temporal stops as its cancel control would, with a report.
      for (const r of sorted.slice(0, -1)) expect({ id: r.workflowId, execution: r.execution, verdict: r.verdict }).toEqual({ id: r.workflowId, execution: 'COMPLETED', verdict: 'stopped' });
      console.log(`schedules: cancel_other ${cancelRuns.length} runs: ${sorted.map((r) => `${r.execution}/${r.verdict ?? '-'} (${r.summary ?? ''})`).join('; ')}`);
    });
  }, 300_000);
});
