// Sub-agents end to end (issue #48's acceptance, docs/sub-agents.md): a session's model — the
// stand-in — calls `agent` three times in one message (two named types from .keel/agents/*.md
// and a fork); one child's command waits for an approval answered on the parent session; the
// worker, a process of its own, is killed with SIGKILL while the children run and started
// again. All three finish, none is lost, no tool runs twice (every command appends a line to
// ledger.txt, counted), and the session's usage is its own calls' plus its children's. Then
// the same turn through the other surfaces: AG-UI over `keel serve`'s HTTP (each child a
// STEP_STARTED/STEP_FINISHED named for it, the approval an interrupt resumed), the CLI (the
// approval with `keel approve`, a child steered with `keel steer --agent`), and the console in
// Chromium (the sub-agent tree under the session, a child's page one click away).
// Run: KEEL_E2E=1 npx vitest run --project e2e test/e2e/sub-agents.test.ts
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildResumeArray, HttpAgent } from '@ag-ui/client';
import { EventType, type BaseEvent } from '@ag-ui/core';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeelClient } from '../../client/index';
import { startStandin } from '../../standin/server';
import { eventsQuery } from '../../workflows/definitions';
import { agentEventsQuery } from '../../workflows/protocol/agent';
import { launchChromium } from '../fixtures/browser';
import { killWhenTestEnds } from '../fixtures/child-teardown';
import { cliEnv, keel } from '../fixtures/client-cli';
import { compiledWorker } from '../fixtures/compiled-cli';
import { authed, startServe, TEST_TOKEN } from '../fixtures/serve-process';
import { KEY, makeWorkspace, say, use, waitUntil } from '../fixtures/session-harness';
import { uniqueTaskQueue } from '../helpers/temporal';
import { useTemporal } from '../fixtures/use-temporal';

const here = path.dirname(fileURLToPath(import.meta.url));
const sessionWorker = await compiledWorker('session-worker');
const fixture = useTemporal();
const { env } = fixture;
let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium(['--headless', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking']);
});
afterAll(async () => {
  await browser?.close();
});

function startWorker(taskQueue: string, standinUrl: string): Promise<ChildProcess> {
  const child = killWhenTestEnds(
    spawn(sessionWorker[0], [sessionWorker[1], env.address, taskQueue, fixture.bundleFile], {
      cwd: path.join(here, '../..'),
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: standinUrl },
    }),
  );
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('worker ready')) resolve(child);
    });
    child.once('exit', (code) => reject(new Error(`session worker exited with ${code}`)));
  });
}

const agentCall = (id: string, input: Record<string, unknown>) => ({ type: 'tool_use' as const, name: 'agent', id, input });
/** The three calls of one message: two named types and a fork; `n` keeps each turn's call ids apart. */
const delegate = (n: number) => ({
  content: [
    agentCall(`toolu_${n}a`, { description: 'survey the repo', prompt: 'RESEARCH TASK', subagent_type: 'research' }),
    agentCall(`toolu_${n}b`, { description: 'review the change', prompt: 'REVIEW TASK', subagent_type: 'reviewer' }),
    agentCall(`toolu_${n}c`, { description: 'try the other approach', prompt: 'FORK TASK', fork: true }),
  ],
});

describe('sub-agents end to end', () => {
  it('three children in parallel survive kill -9 of the worker: all finish, none lost, no tool twice, usage adds up; then AG-UI, CLI and the console', async () => {
    const standin = await startStandin({
      scenario: {
        rules: [
          { name: 'parent sums up', match: { systemContains: 'PARENT', lastUserContains: 'REVIEW DONE' }, reply: say('All three answered.') },
          { name: 'parent delegates 3', match: { lastUserContains: 'delegate via the CLI' }, reply: delegate(3) },
          { name: 'parent delegates 2', match: { lastUserContains: 'delegate via AG-UI' }, reply: delegate(2) },
          { name: 'parent delegates 1', match: { lastUserContains: 'please delegate' }, reply: delegate(1) },
          { name: 'research works', match: { systemContains: 'RESEARCHER', hasToolResults: false }, reply: use('run_command', { command: 'sh work.sh research' }, 'toolu_r') },
          { name: 'research answers', match: { systemContains: 'RESEARCHER', hasToolResults: true }, reply: say('Research done.') },
          { name: 'reviewer asks', match: { systemContains: 'REVIEWER', hasToolResults: false }, reply: use('run_command', { command: 'echo reviewer >> ledger.txt' }, 'toolu_v') },
          { name: 'reviewer answers', match: { systemContains: 'REVIEWER', hasToolResults: true }, reply: say('REVIEW DONE: fine.') },
          { name: 'fork works', match: { lastUserContains: 'FORK TASK' }, reply: use('run_command', { command: 'sh work.sh fork' }, 'toolu_f') },
          { name: 'fork answers', match: { systemContains: 'PARENT', hasToolResults: true }, reply: say('Fork done.') },
        ],
      },
    });
    const workspace = await makeWorkspace('keel-e2e-sub-agents-');
    await fs.mkdir(path.join(workspace, '.keel', 'agents'), { recursive: true });
    await fs.writeFile(path.join(workspace, '.keel', 'agents', 'research.md'), '---\ndescription: Surveys the repository\ntools: [list_dir, run_command]\n---\nYou are RESEARCHER.\n');
    await fs.writeFile(path.join(workspace, '.keel', 'agents', 'reviewer.md'), '---\ndescription: Reviews a change\ntools: [read_file, run_command]\n---\nYou are REVIEWER.\n');
    // Each command leaves one line in the ledger, then takes its time (the worker dies meanwhile).
    await fs.writeFile(path.join(workspace, 'work.sh'), 'echo "$1" >> ledger.txt\nsleep 4\necho "worked $1"\n');
    const ledger = async () => (await fs.readFile(path.join(workspace, 'ledger.txt'), 'utf8').catch(() => '')).split('\n').filter(Boolean);
    const taskQueue = uniqueTaskQueue('e2e-sub-agents');
    let worker = await startWorker(taskQueue, standin.url);
    const serve = await startServe({ taskQueue, workspace });
    try {
      const keelClient = await KeelClient.connect({ client: env.client, taskQueue });
      const session = await keelClient.startSession({ workspace, system: 'You are PARENT.', policy: { mode: 'ask', allow: ['run_command(sh work.sh*)'] }, promptCacheTtl: '1h', agents: {} });
      const sessionId = session.id;

      // ---- 1. the SDK, and kill -9 of the worker while the children run ----
      const turn = session.send('please delegate');
      const [waiting] = await waitUntil(() => session.pendingApprovals(), (p) => p.length === 1, 90_000, "the reviewer's approval in the parent");
      expect(waiting!.reason).toMatch(/^reviewer-\d wants to run `echo reviewer >> ledger.txt`/);
      // The other two are inside their commands (their ledger lines are written, their sleeps run).
      await waitUntil(ledger, (l) => l.includes('research') && l.includes('fork'), 60_000, 'the commands running');
      worker.kill('SIGKILL');
      await new Promise((resolve) => worker.once('exit', resolve));
      worker = await startWorker(taskQueue, standin.url);
      await session.approve(waiting!.callId);
      const first = await turn;
      expect(first.outcome).toBe('completed');
      expect(first.output).toBe('All three answered.');

      const childIds = ['a', 'b', 'c'].map((x) => `${sessionId}/agent-toolu_1${x}`);
      const described = await Promise.all(childIds.map((id) => env.client.workflow.getHandle(id).describe()));
      expect(described.map((d) => d.status.name)).toEqual(['COMPLETED', 'COMPLETED', 'COMPLETED']);
      expect(Math.max(...described.map((d) => d.startTime.getTime()))).toBeLessThan(Math.min(...described.map((d) => d.closeTime!.getTime())));
      // 0 tools twice: one ledger line per command, one result per call in every child.
      expect((await ledger()).sort()).toEqual(['fork', 'research', 'reviewer']);
      for (const id of childIds) {
        const { entries } = await env.client.workflow.getHandle(id).query(agentEventsQuery, { from: 0, limit: 500 });
        const calls = entries.filter((e) => e.kind === 'tool.call').map((e) => (e as { callId: string }).callId);
        const results = entries.filter((e) => e.kind === 'tool.result').map((e) => (e as { callId: string }).callId);
        expect(calls.length).toBe(new Set(calls).size);
        expect(results.sort()).toEqual([...calls].sort());
      }
      // The parent's usage: its own two calls plus what each child's result says it spent.
      const state1 = await session.state();
      const own = standin.requests.filter((r) => r.rule === 'parent delegates 1' || r.rule === 'parent sums up');
      const children = await Promise.all(childIds.map((id) => env.client.workflow.getHandle(id).result() as Promise<{ usage: { inputTokens: number; outputTokens: number } }>));
      const inOf = (u: { input_tokens: number; cache_read_input_tokens?: number | null; cache_creation_input_tokens?: number | null }) => u.input_tokens + (u.cache_read_input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0);
      expect(state1.usage.usage.outputTokens).toBe(own.reduce((n, r) => n + r.usage!.output_tokens, 0) + children.reduce((n, c) => n + c.usage.outputTokens, 0));
      expect(state1.usage.usage.inputTokens).toBe(own.reduce((n, r) => n + inOf(r.usage!), 0) + children.reduce((n, c) => n + c.usage.inputTokens, 0));
      // The fork read its parent's prefix from the cache, marked with the session's hour-long TTL.
      const forkFirst = standin.requests.find((r) => r.rule === 'fork works')!;
      expect(forkFirst.usage!.cache_read_input_tokens).toBeGreaterThan(0);
      expect(JSON.stringify(forkFirst.body)).toContain('"ttl":"1h"');

      // ---- 2. AG-UI over HTTP: the children are steps; the approval an interrupt, resumed ----
      const agent = new HttpAgent({ url: `${serve.url}/api/sessions/${sessionId}/ag-ui`, headers: { Authorization: `Bearer ${TEST_TOKEN}` }, threadId: sessionId });
      agent.addMessage({ id: 'agui-1', role: 'user', content: 'delegate via AG-UI' });
      const run1: BaseEvent[] = [];
      await agent.runAgent({ runId: 'agui-run-1' }, { onEvent: ({ event }) => void run1.push(event) });
      const steps = (events: BaseEvent[], type: EventType) => events.filter((e) => e.type === type).map((e) => (e as unknown as { stepName: string }).stepName);
      expect(steps(run1, EventType.STEP_STARTED).sort()).toEqual([expect.stringMatching(/^fork-/), expect.stringMatching(/^research-/), expect.stringMatching(/^reviewer-/)]);
      expect(run1.at(-1)).toMatchObject({ type: EventType.RUN_FINISHED, outcome: { type: 'interrupt' } });
      expect(agent.pendingInterrupts.map((i) => i.message)).toEqual([expect.stringMatching(/reviewer-\d wants to run `echo reviewer >> ledger.txt`/)]);
      const run2: BaseEvent[] = [];
      await agent.runAgent(
        { runId: 'agui-run-2', resume: buildResumeArray(agent.pendingInterrupts, Object.fromEntries(agent.pendingInterrupts.map((i) => [i.id, { status: 'resolved', payload: { approved: true } }]))) },
        { onEvent: ({ event }) => void run2.push(event) },
      );
      expect(steps(run2, EventType.STEP_FINISHED)).toEqual(expect.arrayContaining([expect.stringMatching(/^reviewer-/)]));
      expect(run2.at(-1)).toMatchObject({ type: EventType.RUN_FINISHED, outcome: { type: 'success' }, result: { outcome: 'completed' } });

      // ---- 3. the CLI: the approval with `keel approve`, the waiting child steered ----
      const cli = cliEnv(taskQueue);
      const third = session.send('delegate via the CLI');
      const [cliWaiting] = await waitUntil(() => session.pendingApprovals(), (p) => p.length === 1, 90_000, 'the third turn waiting');
      const steered = await keel(['steer', sessionId, '--agent', cliWaiting!.agent!.label, '--json', 'check', 'the', 'LOCKFILE'], cli);
      expect(steered.code).toBe(0);
      // And over HTTP: the same child by its label; a name that is no running child is refused.
      const api = authed(serve.url);
      const httpSteer = await api(`/api/sessions/${encodeURIComponent(sessionId)}/steer`, { json: { text: 'and the README', agent: cliWaiting!.agent!.label } });
      expect(httpSteer.status).toBe(200);
      const refusedSteer = await api(`/api/sessions/${encodeURIComponent(sessionId)}/steer`, { json: { text: 'hello', agent: 'research-99' } });
      expect(refusedSteer.ok).toBe(false);
      expect(await refusedSteer.text()).toMatch(/no sub-agent .{0,4}research-99.{0,4} of this session is running/);
      const approved = await keel(['approve', sessionId, cliWaiting!.callId, '-y', '--json'], cli);
      expect(approved.code).toBe(0);
      expect((await third).output).toBe('All three answered.');
      const reviewerAfter = standin.requests.filter((r) => r.rule === 'reviewer answers').at(-1)!;
      expect(JSON.stringify(reviewerAfter.body)).toContain('check the LOCKFILE');
      expect(JSON.stringify(reviewerAfter.body)).toContain('and the README');
      expect((await ledger()).sort()).toEqual(['fork', 'fork', 'fork', 'research', 'research', 'research', 'reviewer', 'reviewer', 'reviewer']);

      // ---- 4. the console in Chromium: the tree under the session, a child one click away ----
      const { entries } = await session.workflowHandle.query(eventsQuery, { from: 0, limit: 500 });
      expect(entries.filter((e) => e.kind === 'subagent.finished').length).toBe(9);
      const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
      const page = await context.newPage();
      await page.goto(`${serve.url}/#token=${TEST_TOKEN}`);
      await page.goto(`${serve.url}/#/session/${encodeURIComponent(sessionId)}`);
      const tree = page.getByRole('tree', { name: 'sub-agents' });
      await expect.poll(() => tree.locator('[data-status="succeeded"]').count(), { timeout: 30_000 }).toBe(9);
      const firstChild = tree.locator(`[data-agent="${childIds[1]}"]`);
      expect(await firstChild.textContent()).toMatch(/reviewer-\d+ reviewer succeeded \d+ steps · [\d,]+ in \/ [\d,]+ out · \$\d+\.\d{4}/);
      expect(await firstChild.textContent()).toContain('$ echo reviewer >> ledger.txt');
      await firstChild.getByRole('link').click();
      await page.locator('#agent').getByText(`Sub-agent of ${sessionId}`).waitFor({ timeout: 15_000 });
      await expect.poll(() => page.locator('#agent .timeline li').count(), { timeout: 15_000 }).toBeGreaterThan(3);
      await fs.mkdir(path.join(here, '../../.keel/screenshots'), { recursive: true });
      await page.screenshot({ path: path.join(here, '../../.keel/screenshots/sub-agent-page.png') });
      await page.goBack();
      await tree.waitFor();
      await page.screenshot({ path: path.join(here, '../../.keel/screenshots/sub-agent-tree.png'), fullPage: true });
      await context.close();
      await session.close();
    } finally {
      worker.kill('SIGKILL');
      await serve.stop();
      await standin.close();
    }
  }, 600_000);
});
