// The console's task-agent page in headless Chromium (issue #51: never checked in a browser
// before; it showed "running" and nothing else), `npm run test:e2e -- console-agent`. A goal
// runs to "goal met" on a real worker and the model stand-in (plan and tool calls approved by
// the API); then:
// - each task agent's page shows its conversation (the model's text, the tools it called with
//   their arguments and what they answered) and its cost, steps and time at a glance, the
//   cost being the goal's usage view of that agent;
// - the goal's and a session's page headers show cost, steps and time; the list shows each
//   run's time;
// - axe-core finds no serious or critical violation on the agent page, light or dark.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadScenario } from '../../standin/scenario';
import { axeViolations, useChromium, openConsole, shotBoth } from '../fixtures/browser';
import { goalEnv } from '../fixtures/goal-harness';
import { authed, readSse, startServe, TEST_TOKEN } from '../fixtures/serve-process';
import { waitUntil } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const { env, workflowBundle } = useTemporal();
const chromium = useChromium();

type Goal = { state: { status: string; pendingApprovals: { callId: string }[]; usage: { usage: { costUsd: number }; agents: Record<string, { costUsd: number }> } }; plan: { tasks: { id: string; agentId: string | null; status: string }[] } };

describe('the console shows every task agent: its conversation and its run at a glance', () => {
  it('an ended goal: each agent page has the conversation, cost, steps and time; the goal and list too', async () => {
    const g = await goalEnv(env, workflowBundle, await loadScenario(path.join(root, 'client/demo/goal-demo.yaml')), 'sk-ant-demo', { ownWorkflowThread: true });
    const server = await startServe({ taskQueue: g.taskQueue, workspace: g.workspace });
    const context = await chromium.browser.newContext({ viewport: { width: 1200, height: 900 }, bypassCSP: true });
    try {
      await g.run(async () => {
        const api = authed(server.url);
        const { id } = (await (await api('/api/goals', { json: { goal: 'A slugify module with passing tests and a README', mode: 'ask' } })).json()) as { id: string };
        const goal = async () => (await (await api(`/api/goals/${encodeURIComponent(id)}`)).json()) as Goal;
        // Approve the plan and every tool call by the API until the goal is met.
        await waitUntil(
          async () => {
            const s = await goal();
            if (s.state.status === 'awaiting_plan_approval') await api(`/api/goals/${encodeURIComponent(id)}/plan/approve`, { method: 'POST' });
            for (const a of s.state.pendingApprovals) await api(`/api/workflows/${encodeURIComponent(id)}/approve`, { json: { callId: a.callId } });
            return s.state.status;
          },
          (status) => status === 'goal_met' || status === 'stopped',
          240_000,
          'the goal to end',
        );
        const done = await goal();
        expect(done.state.status).toBe('goal_met');
        const agents = done.plan.tasks.map((t) => t.agentId).filter((a): a is string => a !== null);
        expect(agents.length).toBeGreaterThan(0);

        const page = await openConsole(context, server.url, TEST_TOKEN);
        let modelWords = 0;
        for (const agentId of agents) {
          await page.goto(`${server.url}/#/agent/${encodeURIComponent(agentId)}`);
          const conversation = page.getByRole('log', { name: 'conversation' });
          await expect.poll(() => page.locator('#agent .badge').first().textContent(), { timeout: 30_000 }).toBe('ended');
          const text = (await conversation.textContent()) ?? '';
          // The tools it called, with what they answered, and every word the model wrote in its
          // stream (read here from the API), in the page.
          expect(text).toMatch(/⚙ (write_file|run_command|read_file|edit_file)/);
          expect(await conversation.locator('.msg.tool').filter({ hasText: /tool result/ }).count()).toBeGreaterThan(0);
          const sse = await readSse(await api(`/api/workflows/${encodeURIComponent(agentId)}/events`, { headers: { Accept: 'text/event-stream' } }), (e) => e.event === 'end');
          const said = sse.flatMap((e) => (e.event === 'model' && (e.data as { kind: string }).kind === 'delta' ? [(e.data as { text: string }).text] : []));
          for (const words of said) expect(text).toContain(words);
          modelWords += said.length;
          const cost = done.state.usage.agents[agentId]?.costUsd ?? 0;
          await expect.poll(() => page.locator('[data-glance="cost"]').textContent(), { timeout: 15_000 }).toBe(`$${cost.toFixed(4)}`);
          expect(await page.locator('[data-glance="steps"]').textContent()).toMatch(/^[1-9]\d* model calls? · [1-9]\d* tool calls?$/);
          expect(await page.locator('[data-glance="time"]').textContent()).toMatch(/^\d+(\.\d)?(ms|s)$|^\d+m \d\ds$/);
        }
        expect(modelWords).toBeGreaterThan(0);
        await shotBoth(page, 'agent');
        expect(await axeViolations(page)).toEqual([]);

        await page.goto(`${server.url}/#/goal/${encodeURIComponent(id)}`);
        await expect.poll(() => page.locator('[data-glance="cost"]').textContent(), { timeout: 30_000 }).toBe(`$${done.state.usage.usage.costUsd.toFixed(4)}`);
        expect(await page.locator('[data-glance="steps"]').textContent()).toMatch(/model call/);

        await page.goto(`${server.url}/#/list`);
        const list = page.getByRole('table', { name: 'goals and sessions' });
        await page.getByLabel('include ended').check();
        await expect.poll(() => list.textContent(), { timeout: 30_000 }).toContain(id);
        expect(await list.locator('thead').textContent()).toContain('Time');
        expect(await list.locator('tr', { hasText: id }).first().locator('td').last().textContent()).toMatch(/^\d+(\.\d)?(ms|s)$|^\d+m \d\ds$/);
      });
    } finally {
      await context.close();
      await server.stop();
    }
  }, 600_000);
});
