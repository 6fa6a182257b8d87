// The console's correctness in a real browser (Debian's headless Chromium via playwright-core)
// against `keel serve` as a child process, a real worker and the model stand-in:
// - focus stays on the focused inbox card, and text typed into it stays, while new items
//   arrive ahead of it; `a` with nothing focused does nothing; `a` on a card approves that
//   card's call (by identity) and says which one;
// - text typed on a session page survives the events that re-read the page;
// - the token is kept for the origin: a deep link in a new tab opens signed in; a deep link
//   in a browser without it survives the token form; signing out forgets it; the login link
//   printed at start works once;
// - the page's event stream resumes after `keel serve` restarts across the session's close,
//   with no event lost or repeated;
// - axe-core finds no serious or critical violation on any page, light or dark.
// Screenshots go to .keel/screenshots (and to docs/images with KEEL_UPDATE_SCREENSHOTS=1).
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeelClient } from '../../client/keel-client';
import { loadScenario } from '../../standin/scenario';
import { axeViolations, launchChromium, shotBoth } from '../fixtures/browser';
import { authed, startServe, TEST_TOKEN, type ServeProcess } from '../fixtures/serve-process';
import { sessionEnv, waitUntil } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, '../..');
const shots = path.join(root, '.keel', 'screenshots');

const { env, workflowBundle } = useTemporal();
let browser: Browser;

beforeAll(async () => {
  await fs.mkdir(shots, { recursive: true });
  browser = await launchChromium(['--headless', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking']);
});
afterAll(async () => {
  await browser?.close();
});

const focusedKey = (page: Page) => page.evaluate<string | null>(`document.activeElement?.closest('.inbox-item')?.dataset.key ?? null`);

describe('keel console: identity, typing, sign-in, stream resume, accessibility', () => {
  it('keeps focus and typed text on the focused card as items arrive, acts on that card only, and keeps typing on a session page', async () => {
    const s = await sessionEnv(env, workflowBundle, await loadScenario(path.join(root, 'test/fixtures/scenarios/session-demo.yaml')), { ANTHROPIC_API_KEY: 'sk-ant-demo' }, { ownWorkflowThread: true });
    let server: ServeProcess | null = await startServe({ taskQueue: s.taskQueue, workspace: s.workspace });
    const context = await browser.newContext({ viewport: { width: 1100, height: 900 }, bypassCSP: true });
    try {
      await s.run(async () => {
        const api = authed(server!.url);
        const newSession = async () => ((await (await api('/api/sessions', { json: { mode: 'ask' } })).json()) as { id: string }).id;
        const s1 = await newSession();
        await api(`/api/sessions/${s1}/messages`, { json: { text: 'please write a note' } });

        const page = await context.newPage();
        await page.goto(`${server!.url}/#token=${TEST_TOKEN}`);
        await page.getByRole('heading', { name: 'Inbox' }).waitFor();
        const card1 = page.locator(`.inbox-item[data-key="tool:${s1}:toolu_demo_write"]`);
        await card1.waitFor({ timeout: 30_000 });
        await expect.poll(() => card1.locator('pre.diff').textContent(), { timeout: 30_000 }).toMatch(/^\+\+\+ b\/NOTE\.md\n(.*\n)*\+Written by Keel\.$/m);
        // "Approve for session" offers the server's suggested rule (machines/approval.ts), as the API lists it.
        const inbox = (await (await api('/api/inbox')).json()) as { items: { callId?: string; workflowId: string; suggestedRule?: string | null }[] };
        expect(inbox.items.find((i) => i.workflowId === s1 && i.callId === 'toolu_demo_write')?.suggestedRule).toBe('write_file(NOTE.md)');
        expect(await card1.locator('input[data-act="rule"]').inputValue()).toBe('write_file(NOTE.md)');

        // Half a deny reason typed into s1's card; then s2's call arrives (listed first).
        const reason = card1.getByLabel('reason');
        await reason.fill('not until');
        await reason.pressSequentially(' Monday', { delay: 20 });
        const s2 = await newSession();
        await api(`/api/sessions/${s2}/messages`, { json: { text: 'please write a note' } });
        const card2 = page.locator(`.inbox-item[data-key="tool:${s2}:toolu_demo_write"]`);
        await card2.waitFor({ timeout: 30_000 });
        // Several polls later: the text, the caret and the card are where they were.
        await page.waitForTimeout(3_500);
        expect(await reason.inputValue()).toBe('not until Monday');
        expect(await page.evaluate(`document.activeElement?.id`)).toBe(await reason.getAttribute('id'));
        expect(await focusedKey(page)).toBe(`tool:${s1}:toolu_demo_write`);

        // Focus on the card itself (not a field), more items, still that card.
        await card1.focus();
        await page.waitForTimeout(2_000);
        expect(await focusedKey(page)).toBe(`tool:${s1}:toolu_demo_write`);

        // `a` with nothing focused: nothing is approved, and the page says why.
        await page.evaluate(`document.activeElement?.blur()`);
        await page.keyboard.press('a');
        await expect.poll(() => page.locator('#status').textContent()).toContain('Nothing selected');
        await page.waitForTimeout(1_000);
        expect(await card1.count()).toBe(1);
        expect(await card2.count()).toBe(1);

        // `a` on s1's card approves s1's call, says so, and leaves s2's waiting.
        await card1.focus();
        await page.keyboard.press('a');
        await expect.poll(() => page.locator('#status').textContent(), { timeout: 15_000 }).toContain(`approve write_file (toolu_demo_write) in ${s1}: done`);
        await card1.waitFor({ state: 'detached', timeout: 30_000 });
        await page.waitForTimeout(2_000);
        expect(await card2.count()).toBe(1);
        const st1 = (await (await api(`/api/sessions/${s1}`)).json()) as { state: { pendingApprovals: unknown[] } };
        const st2 = (await (await api(`/api/sessions/${s2}`)).json()) as { state: { pendingApprovals: unknown[] } };
        expect(st1.state.pendingApprovals).toHaveLength(0);
        expect(st2.state.pendingApprovals).toHaveLength(1);
        await shotBoth(page, 'inbox');
        expect(await axeViolations(page)).toEqual([]);

        // A session page: a message half-typed while the call is approved and the turn ends.
        await page.goto(`${server!.url}/#/session/${encodeURIComponent(s2)}`);
        const box = page.getByRole('textbox', { name: 'Message' });
        await box.waitFor();
        await page.locator(`.inbox-item[data-key="tool:${s2}:toolu_demo_write"]`).waitFor({ timeout: 30_000 });
        await box.fill('and then tell me');
        const before = await page.locator('#events li').count();
        await api(`/api/workflows/${s2}/approve`, { json: { callId: 'toolu_demo_write' } });
        await expect.poll(() => page.getByRole('log', { name: 'conversation' }).textContent(), { timeout: 30_000 }).toContain('Done. The tool said what it said');
        await expect.poll(() => page.locator('#events li').count(), { timeout: 30_000 }).toBeGreaterThan(before + 3);
        expect(await box.inputValue()).toBe('and then tell me');
        expect(await page.evaluate(`document.activeElement?.id`)).toBe('chat-input');
        // The timeline: time, actor and the payload behind each event.
        const first = page.locator('#events li').first();
        expect(await first.locator('time').getAttribute('datetime')).toMatch(/^\d{4}-\d\d-\d\dT/);
        expect(await page.locator('#events').textContent()).toContain('tool.approval_requested');
        // Usage per turn: each finished turn's tokens and cost in its own row.
        const perTurn = page.getByRole('table', { name: 'Tokens and cost of each turn' });
        await expect.poll(() => perTurn.locator('tbody tr').count(), { timeout: 15_000 }).toBeGreaterThan(0);
        expect(await perTurn.locator('tbody tr').first().textContent()).toMatch(/completed\s*[\d,]+\s*[\d,]+\s*\$\d+\.\d{4}/);
        await shotBoth(page, 'session');
        expect(await axeViolations(page)).toEqual([]);

        // The list and the start page.
        await page.goto(`${server!.url}/#/list`);
        await expect.poll(() => page.getByRole('table', { name: 'goals and sessions' }).textContent(), { timeout: 15_000 }).toContain(s2);
        await shotBoth(page, 'list');
        expect(await axeViolations(page)).toEqual([]);
        await page.goto(`${server!.url}/#/new`);
        await page.getByRole('heading', { name: 'New goal' }).waitFor();
        expect(await axeViolations(page)).toEqual([]);
        // Before the run's worker stops: `keel serve` stopped after it waits out the requests
        // its pages left open to a workflow nobody polls any more (~20-30 s per test).
        await context.close();
        await server?.stop();
      });
    } finally {
      await context.close();
      await server?.stop();
      server = null;
    }
  }, 240_000);

  it('keeps the token for the origin: deep links in a new tab, after the token form, sign-out, the one-time login link, and the stream resumed across the close', async () => {
    const s = await sessionEnv(env, workflowBundle, await loadScenario(path.join(root, 'test/fixtures/scenarios/session-demo.yaml')), { ANTHROPIC_API_KEY: 'sk-ant-demo' }, { ownWorkflowThread: true });
    let server = await startServe({ taskQueue: s.taskQueue, workspace: s.workspace });
    const contexts: BrowserContext[] = [];
    const newContext = async () => {
      const c = await browser.newContext({ viewport: { width: 1000, height: 800 }, bypassCSP: true });
      contexts.push(c);
      return c;
    };
    try {
      await s.run(async () => {
        const api = authed(server.url);
        const id = ((await (await api('/api/sessions', { json: { mode: 'full-auto' } })).json()) as { id: string }).id;
        await api(`/api/sessions/${id}/messages`, { json: { text: 'hello there' } });
        const deep = `/#/session/${encodeURIComponent(id)}`;

        // Signed in once by the printed link; a deep link in a new tab opens signed in.
        const signedIn = await newContext();
        const tab1 = await signedIn.newPage();
        await tab1.goto(`${server.url}/#token=${TEST_TOKEN}`);
        await tab1.getByRole('heading', { name: 'Inbox' }).waitFor();
        const tab2 = await signedIn.newPage();
        await tab2.goto(`${server.url}${deep}`);
        await tab2.getByRole('heading', { name: /^Session/ }).waitFor({ timeout: 30_000 });
        expect(tab2.url()).toContain(deep);

        // A browser without the token: the deep link waits behind the token form, then opens.
        const fresh = await newContext();
        const other = await fresh.newPage();
        await other.goto(`${server.url}${deep}`);
        await other.getByLabel('API token').fill(TEST_TOKEN);
        await other.getByRole('button', { name: 'Use token' }).click();
        await other.getByRole('heading', { name: /^Session/ }).waitFor({ timeout: 30_000 });
        expect(other.url()).toContain(deep);
        expect(await axeViolations(other)).toEqual([]);
        // Signing out forgets it for the origin.
        await other.getByRole('button', { name: 'Sign out' }).click();
        await other.getByRole('heading', { name: 'Token needed' }).waitFor();
        expect(await other.evaluate(`localStorage.getItem('keel-token')`)).toBeNull();
        await shotBoth(other, 'token');
        expect(await axeViolations(other)).toEqual([]);

        // The login link printed at start: signs a browser in once, never twice.
        const link = server.output.match(/sign in to the console: (http:\/\/\S+)/)![1]!;
        expect(server.output).not.toContain(TEST_TOKEN);
        // With no animation frame, the console's effects run only after Preact's 100 ms fallback:
        // the /login answer then always comes first, as it sometimes does anyway (the page showed
        // the token form, signed in but not knowing it, until the console took the token as it is
        // once its listeners are up).
        const linkContext = await newContext();
        await linkContext.addInitScript('window.requestAnimationFrame = () => 0;');
        const viaLink = await linkContext.newPage();
        await viaLink.goto(link);
        await viaLink.getByRole('heading', { name: 'Inbox' }).waitFor();
        await expect.poll(() => viaLink.locator('#status').textContent(), { timeout: 15_000 }).toContain('Signed in');
        expect(await viaLink.evaluate(`localStorage.getItem('keel-token')`)).toMatch(/^keel_/);
        const again = await (await newContext()).newPage();
        await again.goto(link);
        await expect.poll(() => again.locator('#status').textContent(), { timeout: 15_000 }).toContain('used or has expired');

        // The stream resumed across the close: the session page follows; `keel serve` goes away,
        // the session closes meanwhile, `keel serve` comes back on the same port.
        await tab2.getByRole('log', { name: 'conversation' }).getByText('Hello!').waitFor({ timeout: 30_000 });
        const port = new URL(server.url).port;
        await server.stop();
        await (await KeelClient.connect({ client: env.client, taskQueue: s.taskQueue })).getSession(id).close('closed while the API was away');
        await waitUntil(async () => (await env.client.workflow.getHandle(id).describe()).status.name, (st) => st === 'COMPLETED', 30_000, 'session closed');
        server = await startServe({ taskQueue: s.taskQueue, workspace: s.workspace, port: Number(port) });
        await expect.poll(() => tab2.locator('#events').textContent(), { timeout: 30_000 }).toContain('session.closed');
        const kinds = await tab2.locator('#events li strong').allTextContents();
        const answer = await authed(server.url)(`/api/sessions/${id}`);
        const body = await answer.text();
        expect(answer.status, body).toBe(200);
        const all = JSON.parse(body) as { state: { nextEventSeq: number } };
        // Every event once, in order, none lost across the restart.
        expect(kinds).toHaveLength(all.state.nextEventSeq);
        // The model's text is still there after the end.
        expect(await tab2.locator('#model-text').textContent()).toContain('Hello!');
        await expect.poll(() => tab2.locator('.report').textContent(), { timeout: 15_000 }).toContain('closed while the API was away');
      });
    } finally {
      for (const c of contexts) await c.close();
      await server.stop();
    }
  }, 240_000);
});
