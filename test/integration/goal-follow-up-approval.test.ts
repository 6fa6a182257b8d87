// The human approved a plan, not what the critic adds to it: a follow-up task waits for plan
// approval (a new plan version) unless the goal was started with auto-approval. Real worker,
// dev server, stand-in as planner, critic and agents, real files.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workflowsPath } from '../../worker/worker';
import { approvePlanUpdate, type GoalLogEntry } from '../../workflows/definitions';
import { critic, goalEnv, plan, planner, recordGoalHistory, review, task, writesFile } from '../fixtures/goal-harness';
import { closeTestEnv } from '../fixtures/worker-teardown';
import { bundle, connectTestEnv, type TemporalTestEnv } from '../helpers/temporal';

let env: TemporalTestEnv;
let workflowBundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  env = await connectTestEnv();
  workflowBundle = await bundle(workflowsPath);
});
afterAll(async () => {
  await closeTestEnv(env);
});

const ofKind = <T = Record<string, unknown>>(entries: GoalLogEntry[], kind: string) => entries.filter((e) => e.kind === kind) as unknown as T[];

describe('critic follow-ups', () => {
  it('wait for plan approval as plan v2; nothing of them runs until a human approves', async () => {
    const g = await goalEnv(env, workflowBundle, {
      rules: [
        { match: planner(), reply: plan([task('code', 'Write the code', 'Write app.txt.')]) },
        ...writesFile('code', 'app.txt', 'app\n'),
        ...writesFile('docs', 'README.txt', 'how to use app\n'),
        { match: critic({ lastUserContains: 'Review cycle 1' }), reply: review('follow_up', 'The code has no documentation.', [task('docs', 'Document it', 'Write README.txt.', { dependencies: ['code'] })]) },
        { match: critic({ lastUserContains: 'Review cycle 2' }), reply: review('pass', 'Code and documentation are there.') },
      ],
    });
    await g.run(async () => {
      const run = await g.start({ goal: 'An app with docs' });
      await run.waitForState((s) => s.status === 'awaiting_plan_approval');
      expect(await run.handle.executeUpdate(approvePlanUpdate, { args: [{}] })).toEqual({ status: 'executing' });

      // The critic adds a task: the goal waits again, at plan v2, and no agent writes README.txt.
      const waiting = await run.waitForState((s) => s.status === 'awaiting_plan_approval' && s.goal.planVersion === 2, 60_000);
      expect(waiting.goal.tasks.map((t) => [t.id, t.status])).toEqual([
        ['code', 'succeeded'],
        ['docs', 'pending'],
      ]);
      await new Promise((r) => setTimeout(r, 1_000));
      await expect(fs.access(path.join(g.workspace, 'README.txt'))).rejects.toThrow();
      expect(g.standin.requests.some((r) => JSON.stringify(r.body).includes('task [docs]'))).toBe(false);
      const before = await run.log();
      expect(ofKind<{ planVersion: number }>(before, 'plan.approval_requested').map((e) => e.planVersion)).toEqual([1, 2]);
      expect(ofKind(before, 'agent.spawning').map((e) => e.taskId)).toEqual(['code']);

      expect(await run.handle.executeUpdate(approvePlanUpdate, { args: [{}] })).toEqual({ status: 'executing' });
      const result = await run.handle.result();
      await recordGoalHistory(run.handle, 'follow-up-plan-approval');
      expect(result.verdict).toBe('goal_met');
      expect(result.tasks.map((t) => [t.id, t.status])).toEqual([
        ['code', 'succeeded'],
        ['docs', 'succeeded'],
      ]);
      expect(await fs.readFile(path.join(g.workspace, 'README.txt'), 'utf8')).toBe('how to use app\n');
      expect(ofKind<{ planVersion: number; by: string }>(await run.log(), 'plan.approved').map((e) => [e.planVersion, e.by])).toEqual([
        [1, 'human'],
        [2, 'human'],
      ]);
    });
  });
});
