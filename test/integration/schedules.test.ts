// Goals on a schedule (docs/schedules.md), on the dev server with a real worker and the model
// stand-in: Temporal's overlap policy skips runs while a slow one is still going; a schedule's
// monthly budget, once spent, ends its next runs at once without a model call; pause, resume,
// trigger, backfill and delete through the compiled `keel` CLI, the SDK and the HTTP API; every
// run listed under its schedule with its cost. Intervals are seconds, not hours, and every wait is on a condition.
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { KeelClient } from '../../client/keel-client';
import { startServer } from '../../server/main';
import { TEST_TOKEN } from '../fixtures/serve-process';
import type { ScheduleDetails } from '../../client/schedules';
import { agent, critic, finish, goalEnv, makeWorkspace, plan, recordGoalHistory, planner, review, task, waitUntil, type GoalEnv } from '../fixtures/goal-harness';
import { cliEnv, keel as keelCli } from '../fixtures/client-cli';
import { useTemporal } from '../fixtures/use-temporal';
import { uniqueTaskQueue } from '../helpers/temporal';

const { env, workflowBundle } = useTemporal();

const billed = (input: number) => ({ input_tokens: input, output_tokens: 10, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
const proposal = plan([task('triage', 'Triage the issues', 'List the open issues in ISSUES.md.')]);

let g: GoalEnv;
let keel: KeelClient;
const made: string[] = [];

afterAll(async () => {
  // Schedules outlive a test: delete them, then stop the runs they started.
  for (const id of made) {
    await keel?.schedules.get(id).delete().catch(() => undefined);
    for await (const w of env.client.workflow.list({ query: `TemporalScheduledById = '${id}' AND ExecutionStatus = 'Running'` })) await env.client.workflow.getHandle(w.workflowId).terminate('test over').catch(() => undefined);
  }
});

describe('scheduled goals', () => {
  it('skips runs that would overlap a slow one; a spent monthly budget ends runs at once; pause, trigger, backfill and delete from the CLI and the SDK', async () => {
    g = await goalEnv(env, workflowBundle, {
      rules: [
        // The budget schedule's goal: one planner call bills 1M input tokens ($3 at Sonnet's price).
        { match: planner({ lastUserContains: 'Spend big' }), reply: { ...proposal, usage: billed(1_000_000) } },
        // The unattended schedule's goal: its agent's write needs an approval nobody gives.
        { match: planner({ lastUserContains: 'Check quietly' }), reply: plan([task('check', 'Write the check', 'Write check.txt.')]) },
        { match: agent('check', { hasToolResults: false }), reply: { content: [{ type: 'tool_use' as const, id: 'toolu_check', name: 'write_file', input: { path: 'check.txt', content: 'ok' } }] } },
        { match: agent('check', { hasToolResults: true }), reply: finish('Could not write check.txt: nobody approved it.') },
        { match: critic(), reply: review('pass', 'Nothing more to do.') },
        // The slow schedule's goal: a plan that then waits for an approval nobody gives.
        { match: planner(), reply: { ...proposal, usage: billed(100) } },
      ],
    });
    await g.run(async () => {
      keel = await KeelClient.connect({ client: env.client, taskQueue: g.taskQueue });
      const suffix = g.taskQueue.slice(-8);

      // ---- a run nobody answers follows the goal's approval timeout (SDK; runs beside the rest) ----
      const quietId = `quiet-${suffix}`;
      made.push(quietId);
      const quiet = await keel.schedules.create({
        id: quietId,
        when: { kind: 'calendar', at: [{ hour: 7, dayOfWeek: [{ start: 1, end: 5 }] }] },
        paused: true,
        note: 'created paused',
        goal: 'Check quietly',
        goalOptions: { workspace: g.workspace, autoApprove: true, policy: { mode: 'ask' }, approvalTimeoutMs: 500 },
      });
      await quiet.trigger();

      // ---- overlap skip (HTTP API): a run every second, each waits for plan approval (slow) ----------
      const server = await startServer({ keel, port: 0, workspace: g.workspace, env: { KEEL_API_TOKEN: TEST_TOKEN } });
      const api = (path: string, init: RequestInit = {}) => fetch(`${server.url}${path}`, { ...init, headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' } });
      const slowId = `slow-${suffix}`;
      made.push(slowId);
      const bad = await api('/api/schedules', { method: 'POST', body: JSON.stringify({ goal: 'x', when: { kind: 'cron', cron: '0 7 * * 8' }, timeZone: 'Mars/Base' }) });
      expect(bad.status).toBe(400);
      // Both problems, each at its field.
      const problem = (await bad.json()) as { errors: { pointer: string; message: string }[] };
      expect(problem.errors).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ pointer: '/body/when/cron', message: expect.stringMatching(/Invalid value for dayOfWeek: 8/) as unknown }),
          expect.objectContaining({ pointer: '/body/timeZone', message: expect.stringMatching(/unknown time zone "Mars\/Base"/) as unknown }),
        ]),
      );
      const made201 = await api('/api/schedules', { method: 'POST', body: JSON.stringify({ id: slowId, goal: 'Triage the new issues', when: { kind: 'interval', every: '1s' }, overlap: 'skip', mode: 'full-auto' }) });
      expect(made201.status).toBe(201);
      expect(await made201.json()).toEqual({ id: slowId, kind: 'schedule' });
      const slow = keel.schedules.get(slowId);
      await waitUntil(() => slow.describe(), (d) => (d.actions?.skippedOverlap ?? 0) >= 2, 20_000, 'runs skipped for overlap');
      const viaApi = (await (await api(`/api/schedules/${slowId}`)).json()) as ScheduleDetails;
      const skipped = viaApi;
      // One run started, and it is still the one running: the others were skipped, not piled up.
      expect(skipped.actions!.taken).toBe(1);
      expect(skipped.actions!.running).toHaveLength(1);
      const slowRuns = await slow.runs();
      expect(slowRuns.map((r) => r.workflowId)).toEqual(skipped.actions!.running);
      expect(slowRuns[0]!.workflowId.startsWith(`${slowId}-`)).toBe(true);
      const slowGoal = keel.getGoal(slowRuns[0]!.workflowId);
      await waitUntil(() => slowGoal.state(), (s) => s.status === 'awaiting_plan_approval', 20_000, 'the slow run waiting');
      expect((await api(`/api/schedules/${slowId}`, { method: 'DELETE' })).status).toBe(200);
      await expect(slow.describe()).rejects.toThrow(/no schedule with id/);
      expect((await api(`/api/schedules/${slowId}`)).status).toBe(404);
      await server.close();
      await slowGoal.cancel('test over');

      // ---- monthly budget: $1 a month, the first run spends $3 ------------------------------
      const cli = cliEnv(g.taskQueue);
      const budgetId = `budget-${suffix}`;
      made.push(budgetId);
      // Due only on 1 January (in Paris): every run here is a trigger or a backfill.
      const created = await keelCli(['schedule', 'create', '--id', budgetId, '--cron', '0 0 1 1 *', '--tz', 'Europe/Paris', '--goal', 'Spend big on triage', '--budget-usd', '1', '--workspace', g.workspace, '--mode', 'full-auto', '--json'], cli);
      expect(created.code, created.stderr).toBe(0);
      expect(created.json<{ id: string; nextRuns: string[] }>().nextRuns[0]).toMatch(/-12-31T23:00:00/);
      const budget = keel.schedules.get(budgetId);

      expect((await keelCli(['schedule', 'trigger', budgetId], cli)).code).toBe(0);
      const first = await waitUntil(() => budget.runs(), (runs) => runs.length === 1 && runs[0]!.execution === 'COMPLETED', 30_000, 'the first run ending');
      // Its own limit was what was left of the month ($1): it stopped on it after the planner's $3 call.
      expect(first[0]!.costUsd).toBeGreaterThan(1);
      expect(first[0]!.summary).toMatch(/budget exhausted/);
      const modelCalls = g.standin.requests.length;

      // The schedule hears of a run's end a moment after it (even after describe() shows none running):
      // a trigger under the schedule's own `skip` could still be skipped, so this one says allow_all.
      // Temporal names a scheduled run after the second it was due (`<id>-<time to the second>`):
      // a trigger in the same second as the first run's would get the first run's workflow id
      // (seen in a clean-clone CI run: the first run took 0.23 s). The clock is waited on, not slept.
      const firstSecond = Math.floor(Date.parse(first[0]!.startTime) / 1000);
      await waitUntil(async () => Math.floor(Date.now() / 1000), (now) => now > firstSecond, 5_000, 'the second after the first run started');
      await budget.trigger('allow_all');
      const second = await waitUntil(() => budget.runs(), (runs) => runs.length === 2 && runs.every((r) => r.execution === 'COMPLETED'), 30_000, 'the second run ending');
      expect(second[0]!.verdict).toBe('stopped');
      expect(second[0]!.summary).toMatch(/^schedule budget spent: \$3\.\d\d of \$1\.00 in \d{4}-\d\d \(1 run\); runs start again on \d{4}-\d\d-01$/);
      expect(second[0]!.costUsd).toBe(0);
      // It called no model.
      expect(g.standin.requests.length).toBe(modelCalls);
      // The gate's activity is new in a goal's history: both shapes replay (test/integration/replay.test.ts).
      await recordGoalHistory(env.client.workflow.getHandle(first[0]!.workflowId), 'scheduled-run-capped');
      await recordGoalHistory(env.client.workflow.getHandle(second[0]!.workflowId), 'scheduled-budget-spent');

      // ---- pause with a note, show, resume (CLI) ------------------------------------------
      expect((await keelCli(['schedule', 'pause', budgetId, '--note', 'budget review'], cli)).code).toBe(0);
      const details = await budget.details();
      expect(details).toMatchObject({ paused: true, note: 'budget review', spend: { budgetUsd: 1, spent: true } });
      expect(details.spend.spentUsd).toBeGreaterThan(1);
      expect(details.runs).toHaveLength(2);
      const plain = await keelCli(['schedule', 'show', budgetId], cli);
      expect(plain.code, plain.stderr).toBe(0);
      expect(plain.stdout).toMatch(/paused {2}\(budget review\)/);
      expect(plain.stdout).toMatch(/spend: +\$3\.\d\d of \$1\.00 in \d{4}-\d\d \(spent\)/);
      await budget.resume('reviewed');
      expect((await budget.describe())).toMatchObject({ paused: false, note: 'reviewed' });

      // ---- backfill two past 1 Januaries (CLI): two more runs, both ended at once --------------
      const backfill = await keelCli(['schedule', 'backfill', budgetId, '--from', '2023-12-30T00:00:00Z', '--to', '2025-01-02T00:00:00Z', '--overlap', 'allow_all'], cli);
      expect(backfill.code, backfill.stderr).toBe(0);
      const all = await waitUntil(() => budget.runs(), (runs) => runs.length === 4 && runs.every((r) => r.execution === 'COMPLETED'), 30_000, 'the backfilled runs ending');
      expect(all.filter((r) => r.summary?.startsWith('schedule budget spent'))).toHaveLength(3);
      expect(g.standin.requests.length).toBe(modelCalls);

      // ---- list (SDK), then delete (CLI) ---------------------------------------------------------
      expect((await keel.schedules.list()).find((s) => s.id === budgetId)).toMatchObject({ spec: { when: { kind: 'cron', cron: '0 0 1 1 *' }, timeZone: 'Europe/Paris', monthlyBudgetUsd: 1 } });
      expect((await keelCli(['schedule', 'delete', budgetId], cli)).code).toBe(0);
      await expect(budget.describe()).rejects.toThrow(/no schedule with id/);
      // Its runs are still there, and still its own.
      expect(await budget.runs()).toHaveLength(4);

      // ---- the unattended run: its write timed out unanswered, the agent went on, the goal ended ----
      const [quietRun] = await waitUntil(() => quiet.runs(), (runs) => runs.length === 1 && runs[0]!.execution === 'COMPLETED', 30_000, 'the unattended run ending');
      expect(quietRun).toMatchObject({ verdict: 'goal_met' });
      expect((await quiet.describe()).paused).toBe(true);
      const toAgent = g.standin.requests.filter((r) => JSON.stringify(r.body).includes('No one approved this tool call in time'));
      expect(toAgent).toHaveLength(1);
      await expect(fs.stat(path.join(g.workspace, 'check.txt'))).rejects.toThrow();
    });
  }, 240_000);

  it('updates a schedule (timing, time zone, overlap, monthly budget, goal text) from the CLI, the SDK and PATCH; the next run pursues the new text; bad changes are refused naming the field', async () => {
    // No worker: nothing here needs a run to go further than being started.
    const taskQueue = uniqueTaskQueue('sched-update');
    const workspace = await makeWorkspace('keel-sched-update-');
    const sdk = await KeelClient.connect({ client: env.client, taskQueue });
    const id = `update-${taskQueue.slice(-8)}`;
    made.push(id);
    keel ??= sdk;
    const s = await sdk.schedules.create({ id, when: { kind: 'cron', cron: '0 7 * * 1-5' }, goal: 'Triage the issues', monthlyBudgetUsd: 2, paused: true, note: 'made paused', goalOptions: { workspace } });

    // CLI: a new timing in another zone, and another budget.
    const cli = cliEnv(taskQueue);
    const changed = await keelCli(['schedule', 'update', id, '--every', '90m', '--tz', 'Europe/Paris', '--budget-usd', '3', '--json'], cli);
    expect(changed.code, changed.stderr).toBe(0);
    expect(changed.json<ScheduleDetails>()).toMatchObject({ id, paused: true, note: 'made paused', spec: { when: { kind: 'interval', every: 5_400_000 }, timeZone: 'Europe/Paris', overlap: 'skip', monthlyBudgetUsd: 3 } });
    // HTTP PATCH: the goal's text, the overlap policy, no monthly budget.
    const server = await startServer({ keel: sdk, port: 0, workspace, env: { KEEL_API_TOKEN: TEST_TOKEN } });
    try {
      const patch = (target: string, body: unknown) => fetch(`${server.url}/api/schedules/${target}`, { method: 'PATCH', body: JSON.stringify(body), headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' } });
      const ok = await patch(id, { goal: 'Triage and label the issues', overlap: 'buffer_one', monthlyBudgetUsd: null });
      expect(ok.status).toBe(200);
      expect(await ok.json()).toMatchObject({ id, goal: 'Triage and label the issues', spec: { when: { kind: 'interval' }, overlap: 'buffer_one' }, spend: { budgetUsd: null } });
      const none = await patch(id, {});
      expect(none.status).toBe(400);
      expect(((await none.json()) as { detail: string }).detail).toMatch(/nothing to change/);
      const bad = await patch(id, { when: { kind: 'cron', cron: '61 * * * *' }, catchupWindow: '1s' });
      expect(bad.status).toBe(400);
      const pointers = ((await bad.json()) as { errors: { pointer: string }[] }).errors.map((e) => e.pointer);
      expect(pointers).toEqual(expect.arrayContaining(['/body/when/cron', '/body/catchupWindow']));
      expect((await patch(`missing-${id}`, { overlap: 'skip' })).status).toBe(404);
    } finally {
      await server.close();
    }

    // SDK: the view (show and list) says what the schedule does now, and Temporal does it.
    const view = await s.describe();
    expect(view).toMatchObject({ goal: 'Triage and label the issues', spec: { when: { kind: 'interval', every: 5_400_000 }, timeZone: 'Europe/Paris', overlap: 'buffer_one' } });
    expect(view.spec.monthlyBudgetUsd).toBeUndefined();
    expect((await sdk.schedules.list()).find((l) => l.id === id)?.spec.overlap).toBe('buffer_one');
    // Due on the 90-minute marks (counted from the epoch).
    expect(view.nextRuns.every((t) => Date.parse(t) % 5_400_000 === 0)).toBe(true);
    expect((await env.client.schedule.getHandle(id).describe()).policies.overlap).toBe('BUFFER_ONE');
    await expect(s.update({ when: { kind: 'cron', cron: '0 7 * * 1-5' }, timeZone: 'Mars/Base' })).rejects.toThrow(/unknown time zone "Mars\/Base"/);
    await expect(s.update({ when: { kind: 'cron', cron: '0 7 * * 1-5' } })).resolves.toMatchObject({ spec: { when: { kind: 'cron', cron: '0 7 * * 1-5' }, timeZone: 'Europe/Paris', overlap: 'buffer_one' } });

    // A run started now pursues the new text, with no monthly budget in its options.
    await s.trigger();
    const [run] = await waitUntil(() => s.runs({ limit: 1 }), (r) => r.length === 1, 10_000, 'the triggered run');
    const started = (await env.client.workflow.getHandle(run!.workflowId).fetchHistory()).events?.[0]?.workflowExecutionStartedEventAttributes;
    const input = JSON.parse(Buffer.from(started!.input!.payloads![0]!.data!).toString('utf8')) as { goal: string; schedule: { monthlyBudgetUsd: number | null; timeZone: string } };
    expect(input).toMatchObject({ goal: 'Triage and label the issues', schedule: { id, monthlyBudgetUsd: null, timeZone: 'Europe/Paris' } });
    await env.client.workflow.getHandle(run!.workflowId).terminate('test over');
    await fs.rm(workspace, { recursive: true, force: true });
  }, 60_000);
});
