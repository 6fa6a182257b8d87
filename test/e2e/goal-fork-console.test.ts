// A goal fork from the console in Chromium (docs/fork-and-rewind.md "Goals"), against `keel
// serve` as a child process, a real worker and the stand-in model: a goal with checkpoints runs
// two tasks in a row (one.txt, then two.txt); its page lists the fork points (plan v1, after t1,
// after t2); "Fork from here" after t1 opens the fork's page, which says whose fork it is and what
// it kept; the fork keeps t1 (not run again), has one.txt restored and runs t2 again.
// `npm run test:e2e -- goal-fork-console`.
import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useChromium, openConsole } from '../fixtures/browser';
import { startServe, TEST_TOKEN, type ServeProcess } from '../fixtures/serve-process';
import { critic, goalEnv, plan, planner, review, task, waitUntil, writesFile } from '../fixtures/goal-harness';
import { useTemporal } from '../fixtures/use-temporal';
import { KeelClient } from '../../client/keel-client';

const { env, workflowBundle } = useTemporal();
const chromium = useChromium();

describe('goal fork in the console', () => {
  it('lists the fork points; Fork from here after a task opens the fork, which keeps that task and has its files', { timeout: 600_000 }, async () => {
    const g = await goalEnv(env, workflowBundle, {
      rules: [
        { match: planner(), reply: plan([task('t1', 'First', 'Create one.txt.'), task('t2', 'Second', 'Create two.txt.', { dependencies: ['t1'] })]) },
        ...writesFile('t1', 'one.txt', 'one\n'),
        ...writesFile('t2', 'two.txt', 'two\n'),
        { match: critic(), reply: review('pass', 'both files are there') },
      ],
    });
    let server: ServeProcess | null = null;
    const context = await chromium.browser.newContext({ viewport: { width: 1100, height: 1000 } });
    let forkWorkspace: string | null = null;
    try {
      await g.run(async () => {
        const run = await g.start({ goal: 'Write two files', autoApprove: true, maxConcurrency: 1, checkpoints: true });
        const id = run.handle.workflowId;
        expect((await run.handle.result()).verdict).toBe('goal_met');
        const t1Calls = () => g.standin.requests.filter((r) => JSON.stringify(r.body).includes('task [t1]')).length;
        const before = t1Calls();
        server = await startServe({ taskQueue: g.taskQueue, workspace: g.workspace });

        const page = await openConsole(context, server.url, TEST_TOKEN);
        await page.goto(`${server.url}/#/goal/${encodeURIComponent(id)}`);
        const section = page.locator('section.goal-forks');
        await section.getByRole('heading', { name: 'Fork points' }).waitFor({ timeout: 60_000 });
        await expect.poll(() => section.locator('tbody tr').count(), { timeout: 30_000 }).toBe(3);

        await section.getByRole('button', { name: 'Fork from here: task t1' }).click();
        await page.waitForURL((u) => u.hash.startsWith(`#/goal/${encodeURIComponent(`${id}-fork-`)}`), { timeout: 60_000 });
        const forkId = decodeURIComponent(new URL(page.url()).hash.replace('#/goal/', ''));
        await expect.poll(() => page.locator('section.goal-forks p.lineage').textContent(), { timeout: 60_000 }).toContain(`Forked from ${id} at task t1; kept: t1.`);
        const keel = await KeelClient.connect({ client: env.client, taskQueue: g.taskQueue });
        const result = await keel.getGoal(forkId).result();
        expect(result.verdict).toBe('goal_met');
        expect(result.tasks.map((t) => t.agentId)).toEqual([`${id}/task-t1/1`, `${forkId}/task-t2/1`]);
        expect(t1Calls()).toBe(before);
        forkWorkspace = path.join(path.dirname(g.workspace), `${path.basename(g.workspace)}.fork-${forkId.slice(-8)}`);
        await waitUntil(() => fs.readdir(forkWorkspace!).catch(() => [] as string[]), (names) => names.includes('two.txt'), 60_000, "the fork's workspace");
        expect(await fs.readFile(path.join(forkWorkspace, 'one.txt'), 'utf8')).toBe('one\n');
      });
    } finally {
      await context.close();
      await (server as ServeProcess | null)?.stop();
      if (forkWorkspace !== null) await fs.rm(forkWorkspace, { recursive: true, force: true });
    }
  });
});
