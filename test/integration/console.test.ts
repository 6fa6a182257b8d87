// The web console in a real browser: Debian's headless Chromium driven by playwright-core,
// against `keel serve` as a child process, a real worker and the model stand-in. A goal is
// started from the page, its plan approved and its tool calls approved from the inbox by
// keyboard until "Goal met"; a session is driven from its page; a context without the token
// is refused. Screenshots of each page go to .keel/screenshots/.
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadScenario } from '../../standin/scenario';
import { axeViolations, launchChromium, shotBoth } from '../fixtures/browser';
import { goalEnv } from '../fixtures/goal-harness';
import { startServe, TEST_TOKEN, type ServeProcess } from '../fixtures/serve-process';
import { sessionEnv } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, '../..');
const shots = path.join(root, '.keel', 'screenshots');

const { env, workflowBundle } = useTemporal();
let browser: Browser;

beforeAll(async () => {
  await fs.mkdir(shots, { recursive: true });
  browser = await launchChromium(['--disable-dev-shm-usage']);
});
afterAll(async () => {
  await browser?.close();
});

const shot = (page: Page, name: string) => page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });

async function terminateAll(ids: string[]) {
  await Promise.allSettled(ids.map((id) => env.client.workflow.getHandle(id).terminate('test over')));
}

describe('keel console in headless Chromium', () => {
  it('starts a goal from the page, approves the plan and the tool calls from the inbox by keyboard, and shows "Goal met"', async () => {
    const g = await goalEnv(env, workflowBundle, await loadScenario(path.join(root, 'client/demo/goal-demo.yaml')), 'sk-ant-demo', { ownWorkflowThread: true });
    const server: ServeProcess = await startServe({ taskQueue: g.taskQueue, workspace: g.workspace });
    const ids: string[] = [];
    const context = await browser.newContext({ viewport: { width: 1200, height: 900 }, bypassCSP: true });
    try {
      await g.run(async () => {
        const page = await context.newPage();
        const cookies: string[] = [];
        page.on('response', (r) => {
          const c = r.headers()['set-cookie'];
          if (c) cookies.push(c);
        });
        // The link `keel serve` prints: the token travels in the fragment, then leaves the URL.
        await page.goto(`${server.url}/#token=${TEST_TOKEN}`);
        await page.getByRole('heading', { name: 'Inbox' }).waitFor();
        expect(page.url()).not.toContain(TEST_TOKEN);

        // Start a goal from the page.
        await page.getByRole('link', { name: 'New' }).click();
        await page.getByLabel('What to achieve').fill('A slugify module with passing tests and a README');
        await page.getByLabel('Tool policy').first().selectOption('ask');
        await page.getByRole('button', { name: 'Start goal' }).click();
        await page.waitForURL(/#\/goal\/goal-/);
        const id = decodeURIComponent(page.url().split('#/goal/')[1]!);
        ids.push(id);

        // The plan waits: approve it with one key on its card.
        const planCard = page.locator('.inbox-item[data-type="plan"]');
        await planCard.waitFor({ timeout: 30_000 });
        await expect.poll(() => page.locator('.graph svg').getAttribute('aria-label'), { timeout: 15_000 }).toMatch(/tests \(pending\) after code/);
        await shot(page, 'goal-plan');
        await shotBoth(page, 'goal-plan');
        expect(await axeViolations(page)).toEqual([]);
        await planCard.focus();
        await page.keyboard.press('a');
        await page.locator('.badge', { hasText: /executing|reviewing/ }).first().waitFor({ timeout: 30_000 });
        // The planner's text, streamed live into the page.
        await expect.poll(() => page.locator('#model-text').textContent(), { timeout: 30_000 }).toContain('Three tasks');

        // The inbox: every tool call of the goal approved from there by keyboard.
        await page.keyboard.press('g');
        await page.keyboard.press('i');
        await page.getByRole('heading', { name: 'Inbox' }).waitFor();
        const calls = page.locator(`.inbox-item[data-type="tool_call"]`);
        await calls.first().waitFor({ timeout: 30_000 });
        await expect.poll(() => calls.first().locator('pre.diff').textContent(), { timeout: 30_000 }).toContain('+export function slugify(text) {');
        await shot(page, 'inbox');
        let approvedCalls = 0;
        const deadline = Date.now() + 180_000;
        for (;;) {
          const state = await env.client.workflow.getHandle(id).query<{ status: string }>('state');
          if (state.status === 'goal_met' || Date.now() > deadline) break;
          if ((await calls.count()) > 0) {
            await page.keyboard.press('j');
            await page.keyboard.press('a');
            approvedCalls += 1;
            await page.locator('#status', { hasText: /: done|: / }).waitFor({ timeout: 10_000 });
          }
          await page.waitForTimeout(300);
        }
        expect(approvedCalls).toBeGreaterThanOrEqual(3);

        // The goal page: met, with its plan graph, task states, evidence, streamed text and budget.
        await page.goto(`${server.url}/#/goal/${encodeURIComponent(id)}`);
        await page.getByRole('heading', { name: 'Goal met', exact: true }).waitFor({ timeout: 30_000 });
        await expect.poll(() => page.locator('.graph svg').getAttribute('aria-label'), { timeout: 15_000 }).toMatch(/code \(succeeded\); tests \(succeeded\) after code; docs \(succeeded\) after code/);
        await expect.poll(() => page.getByRole('table', { name: 'tasks' }).textContent(), { timeout: 30_000 }).toContain('changed slugify.mjs');
        await expect.poll(() => page.locator('#events').textContent(), { timeout: 30_000 }).toContain('plan.goal_met');
        expect(await page.getByLabel('output tokens').isVisible()).toBe(true);
        await shot(page, 'goal-met');
        await shotBoth(page, 'goal-met');
        expect(await axeViolations(page)).toEqual([]);

        // The list with filters.
        await page.goto(`${server.url}/#/list`);
        await page.getByRole('checkbox', { name: 'include ended' }).check();
        await expect.poll(() => page.getByRole('table', { name: 'goals and sessions' }).textContent(), { timeout: 15_000 }).toContain(id);
        await shot(page, 'list');

        // A narrow window: nothing runs off the side.
        await page.setViewportSize({ width: 380, height: 800 });
        await page.goto(`${server.url}/#/goal/${encodeURIComponent(id)}`);
        await page.getByRole('heading', { name: 'Goal met', exact: true }).waitFor();
        // Strings, not functions: this file is type-checked without the DOM library.
        const wide = await page.evaluate(`[...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > 381 && !e.closest('.graph, pre')).map((e) => e.tagName)`);
        expect(wide).toEqual([]);
        expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(381);
        await shot(page, 'goal-narrow');
        expect(cookies).toEqual([]);
        // Before the run's worker stops: `keel serve` stopped after it waits out the requests
        // its pages left open to a workflow nobody polls any more (~20-30 s per test).
        await context.close();
        await server.stop();
      });
    } finally {
      await context.close();
      await server.stop();
      await terminateAll(ids);
    }
  }, 300_000);

  it('drives a session from its page (message, inline approval, streamed reply) and refuses a browser without the token', async () => {
    const s = await sessionEnv(env, workflowBundle, await loadScenario(path.join(root, 'test/fixtures/scenarios/session-demo.yaml')), { ANTHROPIC_API_KEY: 'sk-ant-demo' }, { ownWorkflowThread: true });
    const server = await startServe({ taskQueue: s.taskQueue, workspace: s.workspace });
    const ids: string[] = [];
    const context = await browser.newContext({ viewport: { width: 1000, height: 900 } });
    const stranger = await browser.newContext();
    try {
      await s.run(async () => {
        const page = await context.newPage();
        await page.goto(`${server.url}/#token=${TEST_TOKEN}`);
        await page.getByRole('link', { name: 'New' }).click();
        // A workspace that does not exist yet: refused as it is, made when the form is asked to.
        const sessionForm = page.locator('form', { has: page.getByRole('button', { name: 'Start session' }) });
        await sessionForm.getByLabel(/^Workspace/).fill('made/by-console');
        await page.getByRole('button', { name: 'Start session' }).click();
        await expect.poll(() => page.locator('#status').textContent(), { timeout: 30_000 }).toContain('made/by-console does not exist');
        await sessionForm.getByLabel('create the workspace if it does not exist').check();
        await page.getByRole('button', { name: 'Start session' }).click();
        await page.waitForURL(/#\/session\/session-/);
        ids.push(decodeURIComponent(page.url().split('#/session/')[1]!));
        await page.getByRole('textbox', { name: 'Message' }).fill('please write a note');
        await page.keyboard.press('Enter');
        // The write asks for approval inline; approve it there.
        const card = page.locator('.inbox-item[data-type="tool_call"]');
        await card.waitFor({ timeout: 30_000 });
        await expect.poll(() => card.textContent(), { timeout: 30_000 }).toContain('write_file');
        await card.getByRole('button', { name: /^a Approve$/ }).click();
        await expect.poll(() => page.getByRole('log', { name: 'conversation' }).textContent(), { timeout: 30_000 }).toContain('Done. The tool said what it said');
        await expect.poll(() => page.getByRole('log', { name: 'conversation' }).textContent(), { timeout: 30_000 }).toContain('write_file');
        await shot(page, 'session');
        expect(await fs.readFile(path.join(s.workspace, 'made/by-console', 'NOTE.md'), 'utf8')).toBe('Written by Keel.\n');

        // No token: the page says so and the API refuses the browser's requests.
        const other = await stranger.newPage();
        await other.goto(server.url);
        await expect.poll(() => other.getByRole('alert').textContent(), { timeout: 30_000 }).toContain('Refused');
        const status = await other.evaluate(`fetch('/api/inbox').then((r) => r.status)`);
        expect(status).toBe(401);
        // A wrong token is refused too.
        await other.goto(`${server.url}/#token=keel_not_the_token_000000000000`);
        await expect.poll(() => other.getByRole('alert').textContent(), { timeout: 30_000 }).toContain('not accepted');
        await shot(other, 'refused');
        // Before the run's worker stops: `keel serve` stopped after it waits out the requests
        // its pages left open to a workflow nobody polls any more (~20-30 s per test).
        await context.close();
        await stranger.close();
        await server.stop();
      });
    } finally {
      await context.close();
      await stranger.close();
      await server.stop();
      await terminateAll(ids);
    }
  }, 300_000);
});
