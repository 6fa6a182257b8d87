// The rules of a goal fork (machines/goal-fork.ts): which point a request names, what the fork
// keeps, and each refusal by name — on a recorded goal of three tasks in a row, with a
// follow-up plan version after a review.
import { describe, expect, it } from 'vitest';
import { planGoalFork, type FinishedAttempt, type GoalForkRecord } from '../../machines/goal-fork';
import { toTask, type Task } from '../../machines/task-graph';
import { ZERO_USAGE } from '../../machines/budget';

const m = (n: number) => String(n).repeat(64).slice(0, 64);
const plan = [
  { id: 'a', title: 'A', instructions: 'do a' },
  { id: 'b', title: 'B', instructions: 'do b', dependencies: ['a'] },
  { id: 'c', title: 'C', instructions: 'do c', dependencies: ['b'] },
];
const done = (t: Task, agent: string): Task => ({ ...t, status: 'succeeded', attempts: 1, result: `${t.id} done`, agentId: agent });
const v1 = plan.map((t) => toTask(t, 2));
const ended = (seq: number, taskId: string, outcome: 'succeeded' | 'failed', manifest: string | null, planVersion = 1): FinishedAttempt => ({
  seq, taskId, attempt: 1, agentId: `g/task-${taskId}/1`, outcome, planVersion, at: '', result: `${taskId} done`, evidence: [`file changed: ${taskId}.txt`], usage: { ...ZERO_USAGE, costUsd: seq }, manifest, changed: 1, removed: 0, skipped: [], error: manifest === null ? 'the store was away' : null,
});
// v2: a follow-up `d` after a, b and c were done.
const v2 = [...v1.map((t) => done(t, `g/task-${t.id}/1`)), toTask({ id: 'd', title: 'D', instructions: 'do d' }, 2)];
const record: GoalForkRecord = {
  enabled: true,
  planVersions: [
    { version: 1, at: '', tasks: v1, manifest: m(1), error: null, finished: 0 },
    { version: 2, at: '', tasks: v2, manifest: m(4), error: null, finished: 3 },
  ],
  finished: [ended(1, 'a', 'succeeded', m(2)), ended(2, 'b', 'succeeded', m(3)), ended(3, 'c', 'succeeded', m(4)), ended(4, 'd', 'failed', null, 2)],
  tasks: [...v2.slice(0, 3), { ...v2[3]!, status: 'running' }],
  maxTasks: 50,
};

describe('goal fork rules', () => {
  it('after a task: the tasks done by then kept (with their cost), the rest run again, the workspace of its end', () => {
    const r = planGoalFork(record, { afterTask: 'a' });
    expect(r).toMatchObject({ ok: true, seed: { fromPlanVersion: 1, planVersion: 1, manifest: m(2), changed: false } });
    if (!r.ok) return;
    expect(r.seed.kept).toEqual([{ taskId: 'a', attempt: 1, agentId: 'g/task-a/1', status: 'succeeded', result: 'a done', evidence: ['file changed: a.txt'], usage: { ...ZERO_USAGE, costUsd: 1 } }]);
    expect(r.seed.tasks.map((t) => t.id)).toEqual(['a', 'b', 'c']);
  });

  it('a changed plan: a kept task must be named unchanged; a changed one runs again; the version moves on', () => {
    const changed = [plan[0]!, { ...plan[1]!, instructions: 'do b better' }, plan[2]!];
    const r = planGoalFork(record, { afterTask: 'b' }, changed);
    expect(r).toMatchObject({ ok: true, seed: { planVersion: 2, changed: true, manifest: m(3) } });
    if (r.ok) expect(r.seed.kept.map((k) => k.taskId)).toEqual(['a']);
  });

  it('at a plan version: the tasks done when it was made, the workspace then', () => {
    const r = planGoalFork(record, { atPlanVersion: 2 });
    expect(r).toMatchObject({ ok: true, seed: { manifest: m(4), fromPlanVersion: 2 } });
    if (r.ok) expect(r.seed.kept.map((k) => [k.taskId, k.usage?.costUsd])).toEqual([['a', 1], ['b', 2], ['c', 3]]);
    const first = planGoalFork(record, { atPlanVersion: 1 });
    if (first.ok) expect([first.seed.kept, first.seed.manifest]).toEqual([[], m(1)]);
  });

  it('refuses by name: no checkpoints, an unknown version or task, a running task, one not finished, a point without checkpoint, an invalid plan', () => {
    const code = (r: ReturnType<typeof planGoalFork>) => (r.ok ? 'ok' : `${r.code}: ${r.message}`);
    expect(code(planGoalFork({ ...record, enabled: false }, { atPlanVersion: 1 }))).toMatch(/^checkpoints_off: this goal keeps no checkpoints/);
    expect(code(planGoalFork(record, { atPlanVersion: 3 }))).toBe('unknown_plan_version: plan version 3 does not exist in this goal (its plans: versions 1–2)');
    expect(code(planGoalFork(record, { afterTask: 'z' }))).toBe('unknown_task: task z is not in this goal (its tasks: a, b, c, d)');
    expect(code(planGoalFork(record, { afterTask: 'd' }))).toMatch(/^task_running: task d is running: a task is a fork point once it has finished/);
    const pending = { ...record, tasks: record.tasks.map((t) => (t.id === 'd' ? { ...t, status: 'pending' as const } : t)), finished: record.finished.slice(0, 3) };
    expect(code(planGoalFork(pending, { afterTask: 'd' }))).toMatch(/^task_not_finished: task d has not finished yet \(pending\)/);
    const lost = { ...record, tasks: pending.tasks };
    expect(code(planGoalFork(lost, { afterTask: 'd' }))).toBe("checkpoint_failed: the workspace's checkpoint at that point was not recorded: the store was away");
    expect(code(planGoalFork(record, { afterTask: 'a' }, [{ id: 'a', title: 'A', instructions: '', dependencies: ['a'] }]))).toMatch(/^invalid_plan: the fork's plan is not valid: task a depends on itself/);
    expect(code(planGoalFork(record, { afterTask: 'a' }, []))).toMatch(/^invalid_plan: .*the plan has no tasks/);
  });
});
