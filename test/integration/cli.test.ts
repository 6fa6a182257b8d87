// The `keel` CLI end to end, as child processes against the test server (a worker of this
// test serves its task queue, the model is the stand-in): `keel goal --json --auto-approve`
// returns the report; status, ls, watch, approve and cancel; a refused request exits 5 with
// the reason; `keel chat` driven through stdin with an approval and an interrupt; `keel ls
// --waiting` lists a session waiting for approval, and the session controls.
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { KeelClient, type GoalResult, type ListEntry } from '../../client/index';
import { loadScenario } from '../../standin/scenario';
import { cliEnv, keel, keelBin, keelLive } from '../fixtures/client-cli';
import { goalEnv, waitUntil } from '../fixtures/goal-harness';
import { sessionEnv } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const here = path.dirname(fileURLToPath(import.meta.url));
const goalScenario = path.join(here, '../../client/demo/goal-demo.yaml');
const sessionScenario = path.join(here, '../fixtures/scenarios/session-demo.yaml');

const { env, workflowBundle } = useTemporal();

describe('keel goal, status, ls, watch, approve, cancel', () => {
  it('keel goal --json --auto-approve returns the report; status, ls, a refusal, an unknown id, bad arguments', async () => {
    const g = await goalEnv(env, workflowBundle, await loadScenario(goalScenario), 'sk-ant-demo');
    await g.run(async () => {
      const cli = cliEnv(g.taskQueue);
      const id = `cli-goal-${g.taskQueue.slice(-8)}`;
      const run = await keel(['goal', 'A slugify module with passing tests and a README', '--json', '--auto-approve', '--mode', 'full-auto', '--workspace', g.workspace, '--id', id], cli);
      expect(run.code, run.stderr).toBe(0);
      const report = run.json<GoalResult & { id: string }>();
      expect(report.id).toBe(id);
      expect(report.verdict).toBe('goal_met');
      expect(report.tasks.map((t) => [t.id, t.status])).toEqual([
        ['code', 'succeeded'],
        ['tests', 'succeeded'],
        ['docs', 'succeeded'],
      ]);
      expect(report.tasks[1]!.details?.commands[0]).toMatchObject({ command: 'node --test slugify.test.mjs', exitCode: 0 });
      expect(run.stdout.trim().split('\n')).toHaveLength(1);
      await fs.access(path.join(g.workspace, 'slugify.test.mjs'));

      // These commands only read the finished goal or are refused: run at once (each a process
      // that starts, connects and answers; one after another they were most of this test's time).
      const [status, plain, all, refused, missing, reckless] = await Promise.all([
        keel(['status', id, '--json'], cli),
        keel(['status', id], cli),
        keel(['ls', '--all', '--kind', 'goal', '--json'], cli),
        keel(['approve', id, 'toolu_nope', '--json'], cli),
        // Through client/bin/keel.js (tsx), the entry `npx keel` runs; the rest use the same CLI compiled once.
        keelBin(['status', 'no-such-goal'], cli),
        keel(['goal', 'x', '--mode', 'reckless'], cli),
      ]);
      // Each exit code with the command's stderr: a `status` that exited 1 under load (ci9e, 29 Nov) said nothing more.
      expect(status.code, status.stderr).toBe(0);
      expect(status.json()).toMatchObject({ id, kind: 'goal', status: 'goal_met' });
      expect(plain.code, plain.stderr).toBe(0);
      expect(all.code, all.stderr).toBe(0);
      expect(plain.stdout).toMatch(/goal_met/);
      expect(plain.stdout).toMatch(/tests\s+succeeded/);

      expect(all.json<ListEntry[]>().map((e) => e.id)).toContain(id);

      // Refused: exit 5 with the machine's reason; unknown id: exit 4.
      expect(refused.code, refused.stderr).toBe(5);
      expect(refused.json<{ error: { reason: string } }>().error.reason).toBeTruthy();
      expect(missing.code, missing.stderr).toBe(4);
      expect(missing.stderr).toMatch(/no goal or session with id no-such-goal/);
      expect(reckless.code, reckless.stderr).toBe(2);
    });
  });

  // Its own test (and worker): two more goals, one run to its end, after the one above.
  it('a detached goal: plan approved with keel approve, followed with keel watch; keel cancel stops another', async () => {
    const g = await goalEnv(env, workflowBundle, await loadScenario(goalScenario), 'sk-ant-demo');
    await g.run(async () => {
      const cli = cliEnv(g.taskQueue);
      // A detached goal: its plan approved with `keel approve`, followed with `keel watch`.
      const detached = await keel(['goal', 'Build slugify again', '--detach', '--json', '--mode', 'full-auto', '--workspace', g.workspace], cli);
      expect(detached.code, detached.stderr).toBe(0);
      const second = detached.json<{ id: string }>().id;
      const keelClient = await KeelClient.connect({ client: env.client, taskQueue: g.taskQueue });
      await waitUntil(() => keelClient.getGoal(second).state(), (s) => s.status === 'awaiting_plan_approval', 30_000, 'plan approval');
      const [listed, waiting] = await Promise.all([keel(['ls', '--status', 'awaiting_plan_approval', '--json'], cli), keel(['ls', '--waiting', '--json'], cli)]);
      expect(listed.json<ListEntry[]>().map((e) => e.id)).toContain(second);
      // A plan waiting for approval counts as waiting.
      expect(waiting.json<ListEntry[]>().map((e) => e.id)).toContain(second);
      const approved = await keel(['approve', second], cli, 'y\n');
      expect(approved.code, approved.stderr).toBe(0);
      expect(approved.stdout).toMatch(/plan v1 of \S+ approved/);
      const watched = await keel(['watch', second], cli);
      expect(watched.code, watched.stderr).toBe(0);
      expect(watched.stdout).toMatch(/plan v1/);
      expect(watched.stdout).toMatch(/✔ \[tests\] succeeded/);
      expect(watched.stdout).toMatch(/report: goal met/);

      // keel cancel stops a goal waiting for its plan.
      const third = (await keel(['goal', 'Build slugify once more', '--detach', '--json', '--workspace', g.workspace], cli)).json<{ id: string }>().id;
      await waitUntil(() => keelClient.getGoal(third).state(), (s) => s.status === 'awaiting_plan_approval', 30_000, 'plan approval');
      const cancelled = await keel(['cancel', third, '--reason', 'not today'], cli);
      expect(cancelled.code, cancelled.stderr).toBe(0);
      expect((await keelClient.getGoal(third).result()).verdict).toBe('stopped');
    });
  });
});

describe('keel chat and the session commands', () => {
  it('keel chat through stdin: a reply, an approval answered inline, an interrupt, /close', async () => {
    const s = await sessionEnv(env, workflowBundle, await loadScenario(sessionScenario), { ANTHROPIC_API_KEY: 'sk-ant-demo' });
    await s.run(async () => {
      // The end of input leaves the session open; `keel chat --session` continues it.
      const first = keelLive(['chat', '--workspace', s.workspace], cliEnv(s.taskQueue));
      let id: string;
      try {
        id = (await first.waitFor(/session (\S+) \(/))[1]!;
        first.send('hi');
        await first.waitFor(/keel: Hello! Ask me/);
        first.send('write a note');
        await first.waitFor(/allow write_file.*\[y\/n\/always\]/);
        first.send('y');
        await first.waitFor(/Done\. The tool said/);
        expect(await first.end()).toBe(0);
      } finally {
        if (first.child.exitCode === null) first.child.kill();
      }
      expect(first.stdout).toMatch(new RegExp(`session ${id} stays open: keel chat --session ${id}`));
      const chat = keelLive(['chat', '--session', id], cliEnv(s.taskQueue));
      try {
        await chat.waitFor(/session \S+ \(active\)/);
        chat.send('tell me a story');
        await chat.waitFor(/Once upon/);
        chat.send('/interrupt');
        await chat.waitFor(/\[interrupted/);
        chat.send('/close');
        expect(await chat.end()).toBe(0);
      } finally {
        if (chat.child.exitCode === null) chat.child.kill();
      }
      expect(chat.stdout).toMatch(/session \S+ closed/);
      expect(chat.stdout).not.toContain('\u001b[');
      expect(await fs.readFile(path.join(s.workspace, 'NOTE.md'), 'utf8')).toBe('Written by Keel.\n');
      const log = (await KeelClient.connect({ client: env.client })).getSession(id).log();
      const { entries } = await log;
      const kinds = entries.map((e) => e.kind);
      expect(kinds).toContain('tool.approved');
      expect(kinds).toContain('turn.interrupted');
      expect(kinds.at(-1), JSON.stringify(entries.slice(-3))).toBe('session.closed');
    });
  });

  it('keel ls --waiting lists a session waiting for approval; approve, pause, resume, steer, interrupt, close', async () => {
    const s = await sessionEnv(env, workflowBundle, await loadScenario(sessionScenario), { ANTHROPIC_API_KEY: 'sk-ant-demo' });
    await s.run(async () => {
      const cli = cliEnv(s.taskQueue);
      const client = await KeelClient.connect({ client: env.client, taskQueue: s.taskQueue });
      const session = await client.startSession({ workspace: s.workspace });
      await session.post('write a note');
      await waitUntil(() => session.state(), (st) => st.pendingApprovals.length === 1, 30_000, 'approval');
      await waitUntil(() => client.list({ waitingForApproval: true }), (l) => l.some((e) => e.id === session.id), 30_000, 'visibility');

      const [waiting, table] = await Promise.all([keel(['ls', '--waiting', '--json'], cli), keel(['ls', '--waiting'], cli)]);
      expect(waiting.code, waiting.stderr).toBe(0);
      expect(waiting.json<ListEntry[]>().find((e) => e.id === session.id)).toMatchObject({ kind: 'session', pendingApprovals: 1, workspace: s.workspace });
      expect(table.stdout).toMatch(new RegExp(`${session.id}\\s+session\\s+active\\s+1`));

      const approved = await keel(['approve', session.id], cli, 'y\n');
      expect(approved.code, approved.stderr).toBe(0);
      await waitUntil(() => session.state(), (st) => st.status === 'active', 30_000, 'turn done');
      // Nothing waits any more: the session's answer is a refusal (5), not bad arguments (2); steering an idle session too.
      const [after, nothing, steer] = await Promise.all([keel(['ls', '--waiting', '--json'], cli), keel(['approve', session.id], cli), keel(['steer', session.id, 'be brief'], cli)]);
      expect(after.json<ListEntry[]>().map((e) => e.id)).not.toContain(session.id);
      expect(nothing.code, nothing.stderr).toBe(5);
      expect(nothing.stderr).toMatch(new RegExp(`nothing of ${session.id} waits for approval`));

      expect(steer.code).toBe(5);
      expect((await keel(['pause', session.id, '--json'], cli)).json()).toEqual({ status: 'paused' });
      expect((await keel(['resume', session.id, '--json'], cli)).json()).toEqual({ status: 'active' });
      const [interrupt, status] = await Promise.all([keel(['interrupt', session.id], cli), keel(['status', session.id, '--json'], cli)]);
      expect(interrupt.code).toBe(5);
      expect(status.json()).toMatchObject({ kind: 'session', status: 'active' });
      const closed = await keel(['close', session.id], cli);
      expect(closed.code, closed.stderr).toBe(0);
      expect((await session.result()).outcome).toBe('closed');
    });
  });
});
