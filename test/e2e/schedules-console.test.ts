// The console's schedules page in Chromium (`npm run test:e2e -- schedules-console`): against
// `keel serve` as a child process, a real worker and the model stand-in, a person creates a
// schedule from the form, runs it now, pauses it with a note, resumes it, backfills a range
// and deletes it (asked twice) — and sees each run under the schedule, with its status, cost and
// a link to its goal, and the month's spend against the budget. Each step is checked against the
// SDK's view too, so the page cannot show what the server does not have.
import { describe, expect, it } from 'vitest';
import { KeelClient } from '../../client/keel-client';
import { axeViolations, useChromium, shotBoth } from '../fixtures/browser';
import { agent, critic, finish, goalEnv, plan, planner, review, task, waitUntil } from '../fixtures/goal-harness';
import { startServe, TEST_TOKEN } from '../fixtures/serve-process';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();
const chromium = useChromium();

describe('the console: schedules', () => {
  it('creates, runs now, pauses with a note, resumes, backfills and deletes a schedule; every run is listed under it with a link to its goal', async () => {
    const g = await goalEnv(env, workflowBundle, {
      rules: [
        { match: planner(), reply: plan([task('triage', 'Triage the issues', 'List the open issues.')]) },
        { match: agent('triage'), reply: finish('Triaged: nothing new.') },
        { match: critic(), reply: review('pass', 'Nothing more to do.') },
      ],
    });
    const serve = await startServe({ taskQueue: g.taskQueue, workspace: g.workspace });
    // The browser's zone is UTC: the backfill's datetime-local fields are read in it.
    const context = await chromium.browser.newContext({ viewport: { width: 1100, height: 1000 }, bypassCSP: true, timezoneId: 'UTC' });
    const id = `console-${g.taskQueue.slice(-8)}`;
    try {
      await g.run(async () => {
        const keel = await KeelClient.connect({ client: env.client, taskQueue: g.taskQueue });
        const page = await context.newPage();
        await page.goto(`${serve.url}/#token=${TEST_TOKEN}`);
        await page.getByRole('link', { name: 'Schedules' }).click();
        await page.getByRole('heading', { name: 'Schedules' }).waitFor();
        await page.getByText('No schedules.').waitFor();

        // ---- create from the form: due only on 1 January (UTC), so every run here is asked for ----
        const form = page.getByRole('form', { name: 'New schedule' });
        await form.getByLabel('What each run is to achieve').fill('Triage the new issues');
        await form.getByLabel('Id (default: schedule-…)').fill(id);
        await form.getByLabel('Cron (minute hour day-of-month month day-of-week)').fill('0 0 1 1 *');
        await form.getByLabel('Time zone').fill('UTC');
        await form.getByLabel('When a run is due while the last still runs').selectOption('skip');
        await form.getByLabel('Monthly budget (USD, across the runs; empty: none)').fill('5');
        await form.getByLabel('Tool policy').selectOption('full-auto');
        await form.getByLabel('runs start without plan approval').check();
        await form.getByRole('button', { name: 'Create schedule' }).click();
        const card = page.getByRole('region', { name: `schedule ${id}` });
        await card.waitFor({ timeout: 15_000 });
        await expect.poll(() => card.locator('.spec').textContent()).toBe('cron "0 0 1 1 *" · UTC · overlap skip');
        const due = (await keel.schedules.get(id).describe()).nextRuns[0]!;
        expect(due).toMatch(/-01-01T00:00:00\.000Z$/);
        expect(await card.locator('.next-run').textContent()).not.toBe('none');
        await expect.poll(() => card.locator('.spend').textContent()).toMatch(/^\$0\.0000 of \$5\.0000/);
        expect(await keel.schedules.get(id).describe()).toMatchObject({ goal: 'Triage the new issues', spec: { when: { kind: 'cron', cron: '0 0 1 1 *' }, monthlyBudgetUsd: 5 } });

        // ---- run now: the run appears under the schedule, and ends met ------------------------------
        await card.getByRole('button', { name: 'Run now' }).click();
        const runs = card.getByRole('table', { name: `runs of ${id}` });
        await expect.poll(() => runs.locator('tr.run').count(), { timeout: 30_000 }).toBe(1);
        await expect.poll(() => runs.locator('tr.run .badge').first().textContent(), { timeout: 60_000 }).toBe('goal met');
        const [first] = await keel.schedules.get(id).runs();
        expect(first!.workflowId.startsWith(`${id}-`)).toBe(true);
        await expect.poll(() => card.locator('.spend').textContent(), { timeout: 10_000 }).toMatch(/^\$0\.0[0-9]{3} of \$5\.0000/);
        const spent = (await keel.schedules.get(id).details()).spend.spentUsd;
        expect(spent).toBeGreaterThan(0);

        // ---- pause with a note; resume -----------------------------------------------------------------
        await card.getByLabel('note').fill('holiday freeze');
        await card.getByRole('button', { name: 'Pause' }).click();
        await expect.poll(() => card.locator('.state').textContent(), { timeout: 10_000 }).toBe('paused (holiday freeze)');
        expect(await card.locator('.next-run').textContent()).toBe('none while paused');
        expect(await keel.schedules.get(id).describe()).toMatchObject({ paused: true, note: 'holiday freeze' });
        await shotBoth(page, 'console-schedules');
        expect(await axeViolations(page)).toEqual([]);
        await card.getByLabel('note').fill('back');
        await card.getByRole('button', { name: 'Resume' }).click();
        await expect.poll(() => card.locator('.state').textContent(), { timeout: 10_000 }).toBe('running (back)');

        // ---- backfill a range holding one 1 January: one more run ------------------------------------
        // The schedule hears of the first run's end a moment after it: wait until it shows none running, so `skip` does not drop the backfill.
        await waitUntil(() => keel.schedules.get(id).describe(), (d) => d.actions?.running.length === 0, 10_000, 'the schedule seeing its run end');
        await card.getByLabel('backfill from').fill('2025-12-31T12:00:00');
        await card.getByLabel('to', { exact: true }).fill('2026-01-01T12:00:00');
        await card.getByRole('button', { name: 'Backfill' }).click();
        await expect.poll(() => runs.locator('tr.run').count(), { timeout: 30_000 }).toBe(2);
        const both = await waitUntil(() => keel.schedules.get(id).runs(), (r) => r.length === 2 && r.every((x) => x.execution === 'COMPLETED'), 60_000, 'both runs ending');
        expect(both.map((r) => r.workflowId)).toContain(`${id}-2026-01-01T00:00:00Z`);
        await expect.poll(async () => (await runs.locator('tr.run .badge').allTextContents()).join(','), { timeout: 10_000 }).toBe('goal met,goal met');

        // ---- the run's link opens its goal --------------------------------------------------------------
        await runs.getByRole('link', { name: `${id}-2026-01-01T00:00:00Z` }).click();
        await page.waitForURL(new RegExp(`#/goal/${encodeURIComponent(`${id}-2026-01-01T00:00:00Z`).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`));
        await page.getByText('Triage the new issues').first().waitFor({ timeout: 15_000 });

        // ---- delete, asked twice ------------------------------------------------------------------------------
        await page.getByRole('link', { name: 'Schedules' }).click();
        await card.waitFor();
        await card.getByRole('button', { name: 'Delete…' }).click();
        await card.getByRole('button', { name: 'Keep it' }).click();
        expect((await keel.schedules.list()).map((s) => s.id)).toContain(id);
        await card.getByRole('button', { name: 'Delete…' }).click();
        await card.getByRole('button', { name: 'Yes, delete' }).click();
        await card.waitFor({ state: 'detached', timeout: 15_000 });
        await expect(keel.schedules.get(id).describe()).rejects.toThrow(/no schedule with id/);
        // Its runs are still there, under its id.
        expect(await keel.schedules.get(id).runs()).toHaveLength(2);
      });
    } finally {
      await keelDelete(id);
      await context.close();
      await serve.stop();
    }
  }, 300_000);
});

async function keelDelete(id: string): Promise<void> {
  await env.client.schedule.getHandle(id).delete().catch(() => undefined);
}
