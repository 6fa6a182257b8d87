// Goal forks (docs/fork-and-rewind.md "Goals") end to end: a real worker and dev server, the
// stand-in model as planner, critic and task agents, real tools. A goal with checkpoints runs
// three tasks in a row, each agent writing a file; a fork after task t1 with a changed plan keeps
// t1 (its result, its agent, not run again), has t1's file restored in its own workspace and runs
// the changed tasks; a fork at plan version 1 runs all three again from the workspace as the goal
// found it; the parent is untouched. Refused by name: a running task, a task not finished, an
// unknown plan version or task, an invalid plan, a goal without checkpoints.
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { KeelClient } from '../../client/keel-client';
import { CheckpointError } from '../../client/checkpoints';
import { InvalidInputError } from '../../client/errors';
import type { GoalLogEntry } from '../../workflows/definitions';
import { createApp } from '../../server/app';
import { cliEnv, keel as keelCli } from '../fixtures/client-cli';
import { critic, goalEnv, plan, planner, recordGoalHistory, review, task, writesFile } from '../fixtures/goal-harness';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();

/** Every file under `dir` but Keel's own state: path → content. */
async function filesOf(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await fs.readdir(dir, { recursive: true, withFileTypes: true })) {
    const rel = path.relative(dir, path.join(entry.parentPath, entry.name));
    if (rel.split(path.sep)[0] === '.keel' || !entry.isFile()) continue;
    out[rel] = await fs.readFile(path.join(dir, rel), 'utf8');
  }
  return out;
}

const refusal = async (p: Promise<unknown>): Promise<{ code: string; message: string }> => {
  const error = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(CheckpointError);
  return { code: (error as CheckpointError).code, message: (error as CheckpointError).message };
};

const PLAN = [
  task('t1', 'First', 'Create one.txt containing "one".'),
  task('t2', 'Second', 'Create two.txt containing "two".', { dependencies: ['t1'] }),
  task('t3', 'Third', 'Create three.txt containing "three".', { dependencies: ['t2'] }),
];

describe('goal fork', () => {
  it('forks after a finished task with a changed plan and at a plan version: kept tasks not run again, their files restored, the rest run again; the parent untouched; refusals by name', async () => {
    const g = await goalEnv(env, workflowBundle, {
      rules: [
        { match: planner(), reply: plan(PLAN) },
        // t1's agent takes a moment: the fork after it is refused while it runs.
        ...writesFile('t1', 'one.txt', 'one\n', { delayMs: 1500 }),
        ...writesFile('t2', 'two.txt', 'two\n'),
        ...writesFile('t3', 'three.txt', 'three\n'),
        ...writesFile('t2b', 'two-b.txt', 'two, the other way\n'),
        { match: critic(), reply: review('pass', 'every file is there') },
      ],
    });
    const forks: string[] = [];
    await g.run(async () => {
      const keel = await KeelClient.connect({ client: env.client, taskQueue: g.taskQueue });
      await fs.writeFile(path.join(g.workspace, 'base.txt'), 'as the goal found it\n');
      const run = await g.start({ goal: 'Write three files', autoApprove: true, maxConcurrency: 1, checkpoints: true });
      const id = run.handle.workflowId;

      // A running task is no fork point; a pending one has not finished.
      await run.waitForState((s) => s.running.some((r) => r.taskId === 't1'));
      expect(await refusal(keel.forkGoal(id, { afterTask: 't1' }))).toMatchObject({ code: 'task_running', message: expect.stringContaining('task t1 is running') as string });
      expect(await refusal(keel.forkGoal(id, { afterTask: 't3' }))).toMatchObject({ code: 'task_not_finished' });

      const parent = await run.handle.result();
      expect(parent.verdict).toBe('goal_met');
      await recordGoalHistory(run.handle, 'checkpoints-parent');
      await recordGoalHistory(env.client.workflow.getHandle(`${id}/task-t1/1`), 'checkpoints-parent-agent');
      const parentFiles = await filesOf(g.workspace);
      expect(parentFiles).toEqual({ 'base.txt': 'as the goal found it\n', 'one.txt': 'one\n', 'two.txt': 'two\n', 'three.txt': 'three\n' });
      const agentCalls = (taskId: string) => g.standin.requests.filter((r) => JSON.stringify(r.body).includes(`task [${taskId}]`)).length;
      const t1Calls = agentCalls('t1');
      expect(t1Calls).toBe(2);

      // Refusals: unknown points, a plan a planner could not propose either.
      expect(await refusal(keel.forkGoal(id, { atPlanVersion: 7 }))).toMatchObject({ code: 'unknown_plan_version', message: expect.stringContaining('plan version 7 does not exist') as string });
      expect(await refusal(keel.forkGoal(id, { afterTask: 'nope' }))).toMatchObject({ code: 'unknown_task', message: expect.stringContaining('task nope is not in this goal') as string });
      const cyclic = [task('t1', 'First', 'x', { dependencies: ['t9'] })];
      expect(await refusal(keel.forkGoal(id, { afterTask: 't1', plan: cyclic }))).toMatchObject({ code: 'invalid_plan', message: expect.stringContaining('depends on unknown task t9') as string });
      await expect(keel.forkGoal(id, { atPlanVersion: 1, afterTask: 't1' })).rejects.toBeInstanceOf(InvalidInputError);

      // After t1, with a changed plan: t1 unchanged (kept), t2 replaced by t2b, t3 now after t2b (changed: runs again).
      const changed = [PLAN[0]!, task('t2b', 'Second, another way', 'Create two-b.txt.', { dependencies: ['t1'] }), { ...PLAN[2]!, dependencies: ['t2b'] }];
      const workspace1 = path.join(path.dirname(g.workspace), `${path.basename(g.workspace)}-fork1`);
      forks.push(workspace1);
      const f1 = await keel.forkGoal(id, { afterTask: 't1', plan: changed, workspace: workspace1 });
      expect(f1.forkOf).toMatchObject({ goalId: id, point: { afterTask: 't1' }, planVersion: 2, kept: ['t1'], rerun: ['t2b', 't3'] });
      const r1 = await f1.goal.result();
      expect(r1.verdict).toBe('goal_met');
      expect(r1.tasks.map((t) => [t.id, t.status, t.agentId])).toEqual([
        ['t1', 'succeeded', `${id}/task-t1/1`],
        ['t2b', 'succeeded', `${f1.id}/task-t2b/1`],
        ['t3', 'succeeded', `${f1.id}/task-t3/1`],
      ]);
      expect(r1.tasks[0]!.result).toBe('Wrote one.txt.');
      expect(r1.tasks[0]!.details).toMatchObject({ filesChanged: ['one.txt'] });
      expect(agentCalls('t1')).toBe(t1Calls);
      // t1's file restored (and the workspace as the goal found it); t2's never existed here; the changed tasks' files.
      expect(await filesOf(workspace1)).toEqual({ 'base.txt': 'as the goal found it\n', 'one.txt': 'one\n', 'two-b.txt': 'two, the other way\n', 'three.txt': 'three\n' });
      // t1's cost is the parent's (counted there once): the fork's usage is its own agents', planner-free.
      const u1 = await f1.goal.usage();
      expect(Object.keys(u1.agents).sort()).toEqual([`${f1.id}/task-t2b/1`, `${f1.id}/task-t3/1`]);
      const log1 = (await f1.goal.log()).entries;
      expect(log1.find((e) => e.kind === 'goal.forked')).toMatchObject({ fromGoal: id, kept: ['t1'], written: 2 });
      expect(log1.some((e: GoalLogEntry) => e.kind === 'plan.requested')).toBe(false);
      await recordGoalHistory(f1.goal.workflowHandle, 'fork-after-task');

      // At plan version 1: nothing was done then; every task runs again from the workspace as the goal found it.
      const workspace2 = path.join(path.dirname(g.workspace), `${path.basename(g.workspace)}-fork2`);
      forks.push(workspace2);
      const f2 = await keel.forkGoal(id, { atPlanVersion: 1, workspace: workspace2 });
      expect(f2.forkOf).toMatchObject({ planVersion: 1, kept: [], rerun: ['t1', 't2', 't3'] });
      const r2 = await f2.goal.result();
      expect(r2.verdict).toBe('goal_met');
      expect(r2.tasks.map((t) => t.agentId)).toEqual(['t1', 't2', 't3'].map((t) => `${f2.id}/task-${t}/1`));
      expect(await filesOf(workspace2)).toEqual(parentFiles);
      expect(agentCalls('t1')).toBe(t1Calls + 2);

      // A fork of a fork: after its own task t2b (t1 is still the parent's, kept through the first fork).
      const ff = await keel.forkGoal(f1.id, { afterTask: 't2b', workspace: `${workspace1}-again` });
      forks.push(`${workspace1}-again`);
      expect(ff.forkOf).toMatchObject({ kept: ['t1', 't2b'], rerun: ['t3'] });
      const rff = await ff.goal.result();
      expect(rff.tasks.map((t) => t.agentId)).toEqual([`${id}/task-t1/1`, `${f1.id}/task-t2b/1`, `${ff.id}/task-t3/1`]);
      expect(await filesOf(`${workspace1}-again`)).toEqual(await filesOf(workspace1));

      // The parent is untouched.
      expect(await filesOf(g.workspace)).toEqual(parentFiles);
      expect((await keel.getGoal(id).state()).status).toBe('goal_met');

      // Over HTTP: the same request (one zod schema); a refusal is a 409 with its code.
      const app = createApp({ keel, tokens: [{ name: 'ann', sha256: createHash('sha256').update('keel-goal-fork-token').digest() }], workspace: g.workspace });
      const http = async (method: 'GET' | 'POST', url: string, body?: unknown) => {
        const res = await app.request(url, { method, headers: { authorization: 'Bearer keel-goal-fork-token', 'content-type': 'application/json' }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
        return { status: res.status, body: (await res.json()) as Record<string, unknown> };
      };
      expect(await http('POST', `/api/goals/${id}/fork`, { afterTask: 'nope' })).toMatchObject({ status: 409, body: { code: 'unknown_task' } });
      expect(await http('POST', `/api/goals/${id}/fork`, { atPlanVersion: 1, afterTask: 't1' })).toMatchObject({ status: 400 });
      // /openapi.json documents the route from the same schema (one point, a plan of tasks).
      const openapi = (await http('GET', '/openapi.json')).body as { paths: Record<string, { post?: { requestBody: { content: { 'application/json': { schema: { properties: Record<string, unknown> } } } } } }> };
      expect(Object.keys(openapi.paths[`/api/goals/{id}/fork`]!.post!.requestBody.content['application/json'].schema.properties).sort()).toEqual(['afterTask', 'atPlanVersion', 'plan']);
      expect((await http('GET', `/api/goals/${id}/checkpoints`)).body).toMatchObject({ enabled: true, planVersions: [{ version: 1 }], finished: [{ taskId: 't1' }, { taskId: 't2' }, { taskId: 't3' }] });

      // The CLI: a plan file as `keel status --json` shows the plan (tasks with their state), after the last task: all kept, the critic only.
      const planFile = path.join(workspace1, '..', `${path.basename(g.workspace)}-plan.json`);
      forks.push(planFile, `${g.workspace}-cli`);
      await fs.writeFile(planFile, JSON.stringify(await keel.getGoal(id).plan()));
      const cli = await keelCli(['goal', 'fork', id, '--after-task', 't3', '--plan-file', planFile, '--workspace', `${g.workspace}-cli`, '--json'], cliEnv(g.taskQueue));
      expect(cli.code, cli.stderr).toBe(0);
      const viaCli = cli.json<{ id: string; forkOf: { kept: string[]; rerun: string[] } }>();
      expect(viaCli.forkOf).toMatchObject({ kept: ['t1', 't2', 't3'], rerun: [] });
      expect((await keel.getGoal(viaCli.id).result()).verdict).toBe('goal_met');
      expect(await filesOf(`${g.workspace}-cli`)).toEqual(parentFiles);
      const refusedCli = await keelCli(['goal', 'fork', id, '--after-task', 'nope'], cliEnv(g.taskQueue));
      expect([refusedCli.code, refusedCli.stderr]).toEqual([5, expect.stringContaining('task nope is not in this goal')]);

      // A goal started without checkpoints: no fork (its agents' files were not recorded).
      const plain = await g.start({ goal: 'NOCHECKPOINTS' });
      await plain.waitForState((s) => s.status === 'awaiting_plan_approval');
      expect(await refusal(keel.forkGoal(plain.handle.workflowId, { atPlanVersion: 1 }))).toMatchObject({ code: 'checkpoints_off' });
    });
    await Promise.all(forks.map((f) => fs.rm(f, { recursive: true, force: true })));
  });
});
