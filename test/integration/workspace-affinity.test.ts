// Workspace affinity: a workspace on one host's disk is worked on by that host only. Two
// worker processes share the fleet's task queue and a conversation store; each is started
// with its own KEEL_WORKSPACE_HOST. Host B runs in a mount namespace of its own where the
// workspace root is an empty tmpfs — as a second machine without the first one's disk sees
// it. A session started with `workspaceHost: "host-a"` runs its setup and every tool call on
// host A (while model calls go to either), and so do a goal's setup and its task agent's
// tools; SIGKILL host A, and the next tool call waits for it — well beyond
// workspaceHostWaitMs, which used to fail the call once ("workspace host "host-a" is not
// polling …") — running nowhere meanwhile, not on host B's empty directory, while the
// session says which host it waits for. A new worker on host A takes the waiting calls, and
// the turn goes on. A setup taken by a host's worker that dies before it answers runs again on
// the host's next worker once its heartbeat is missed (it waited out its two-minute timeout). A
// session whose host never polls waits at start, saying so (it used to fail).
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandin } from '../../standin/server';
import { stateQuery, userMessageUpdate } from '../../workflows/definitions';
import { goalWorkflow } from '../../workflows/goal';
import { sessionWorkflow } from '../../workflows/session';
import { critic, FAST_MODEL, plan, planner, review, task, writesFile } from '../fixtures/goal-harness';
import { say, waitUntil } from '../fixtures/session-harness';
import { uniqueTaskQueue } from '../helpers/temporal';
import { activitiesOf, command, killHostWorker, startHostWorker, toolResults, workerOf, type WorkerProcess } from '../fixtures/host-workers';
import { useTemporal } from '../fixtures/use-temporal';

const WAIT_MS = 3_000;

const fixture = useTemporal();
const { env } = fixture;
let scratch: string;

beforeAll(async () => {
  scratch = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-affinity-')));
});

afterAll(async () => {
  if (scratch) await fs.rm(scratch, { recursive: true, force: true });
});

/** The workers that polled `taskQueue` for activities lately. */
const pollersOf = async (taskQueue: string) => {
  const { pollers } = await env.client.workflowService.describeTaskQueue({ namespace: env.namespace, taskQueue: { name: taskQueue }, taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY });
  return (pollers ?? []).map((p) => workerOf(p.identity));
};
const startWorker = (taskQueue: string, extra: NodeJS.ProcessEnv, hide?: string) => startHostWorker(env.address, taskQueue, fixture.bundleFile, extra, hide);
const kill = killHostWorker;
const activities = activitiesOf;

describe('workspace affinity', () => {
  it("a session's and a goal's setup and tools run on its workspace's host; with that host gone the call waits for it, runs nowhere meanwhile, and runs there once a new worker is back; a setup lost with its worker runs again in seconds", async () => {
    const standin = await startStandin({
      scenario: {
        rules: [
          { match: planner(), reply: plan([task('code', 'Code', 'Write a.txt.')]) },
          ...writesFile('code', 'a.txt', 'written on host A\n'),
          { match: critic(), reply: review('pass', 'a.txt is there.') },
          ...['t1', 't2', 't3', 't4', 't5'].map((t) => ({ match: { lastUserContains: `${t} go`, hasToolResults: false }, reply: command(t) })),
          { match: { hasToolResults: true }, reply: say('Done.') },
        ],
      },
    });
    const taskQueue = uniqueTaskQueue('affinity');
    const root = path.join(scratch, 'disk-of-host-a');
    const workspace = path.join(root, 'ws');
    await fs.mkdir(workspace, { recursive: true });
    await fs.writeFile(path.join(workspace, 'notes.md'), 'host A notes\n');
    const store = path.join(scratch, 'shared-store');
    const common = { ANTHROPIC_BASE_URL: standin.url, KEEL_STORE_DIR: store };
    const workers: WorkerProcess[] = [];
    try {
      // Both hosts start at once (two worker processes starting are seconds each on a busy machine).
      const startB = startWorker(taskQueue, { ...common, KEEL_WORKSPACE_HOST: 'host-b' }, root);
      const startA = startWorker(taskQueue, { ...common, KEEL_WORKSPACE_HOST: 'host-a' });
      // Both settled before anything can throw: the finally block stops whichever started.
      for (const r of await Promise.allSettled([startB, startA])) if (r.status === 'fulfilled') workers.push(r.value);
      const [b, firstA] = await Promise.all([startB, startA]);
      let a = firstA;
      expect(a.output.join('')).toContain(`keel worker: workspaces: on this host's disk, served on task queue "${taskQueue}@host-a" (KEEL_WORKSPACE_HOST=host-a)`);

      const handle = await env.client.workflow.start(sessionWorkflow, {
        taskQueue,
        workflowId: `${taskQueue}-session`,
        args: [{ workspace, workspaceHost: 'host-a', workspaceHostWaitMs: WAIT_MS, policy: { mode: 'full-auto' } }],
      });
      const turn = async (t: string, n: number) => {
        await handle.executeUpdate(userMessageUpdate, { args: [{ text: `${t} go` }] });
        await waitUntil(() => handle.query(stateQuery).catch(() => null), (s) => s !== null && s.session.turns === n && s.status !== 'processing', 60_000, `turn ${t}`);
      };

      // Both hosts up: every call that touches the workspace runs on host A.
      for (const [n, t] of ['t1', 't2', 't3'].entries()) await turn(t, n + 1);
      expect(await fs.readFile(path.join(workspace, 'runs.log'), 'utf8')).toBe('t1\nt2\nt3\n');
      for (const t of ['t1', 't2', 't3']) {
        const results = toolResults(standin.requests, t);
        expect(results.map((r) => r.is_error ?? false)).toEqual([false, false]);
        expect(results[0]!.content).toContain('exit code 0');
        expect(results[1]!.content).toContain('host A notes');
      }
      const before = await activities(handle);
      const touching = before.filter((x) => x.type !== 'callModel');
      expect(touching.map((x) => x.type).sort()).toEqual(['prepareSetup', ...Array<string>(6).fill('runTool')]);
      expect(touching.filter((x) => x.queue !== `${taskQueue}@host-a` || x.worker !== a.identity)).toEqual([]);
      // The model calls stay on the fleet's queue.
      expect(before.filter((x) => x.type === 'callModel').every((x) => x.queue === taskQueue)).toBe(true);

      // A goal too: its setup and its task agent's tools run on host A.
      const goal = await env.client.workflow.start(goalWorkflow, {
        taskQueue,
        workflowId: `${taskQueue}-goal`,
        args: [{ goal: 'a.txt', workspace, workspaceHost: 'host-a', workspaceHostWaitMs: WAIT_MS, autoApprove: true, policy: { mode: 'full-auto' }, modelActivity: FAST_MODEL }],
      });
      expect((await goal.result()).verdict).toBe('goal_met');
      expect(await fs.readFile(path.join(workspace, 'a.txt'), 'utf8')).toBe('written on host A\n');
      const goalSide = [...(await activities(goal)), ...(await activities(env.client.workflow.getHandle(`${taskQueue}-goal/task-code/1`)))].filter((x) => x.type !== 'callModel');
      expect(goalSide.map((x) => x.type).sort()).toEqual(['prepareSetup', 'runTool']);
      expect(goalSide.filter((x) => x.queue !== `${taskQueue}@host-a` || x.worker !== a.identity)).toEqual([]);

      // Host A is gone: the tool calls wait for it, the session says so, and nothing runs elsewhere.
      await kill(a);
      const cut = Date.now();
      await handle.executeUpdate(userMessageUpdate, { args: [{ text: 't4 go' }] });
      const waiting = await waitUntil(() => handle.query(stateQuery), (s) => /^waiting for workspace host "host-a" since \d\d:\d\d:\d\d UTC, \d+ tr(y|ies): workspace host "host-a" is not polling/.test(s.waiting ?? ''), 60_000, 'the wait for host A');
      expect(waiting.status).toBe('processing');
      // Away for several times the wait that used to fail the call (the fault, not a synchronisation).
      await new Promise((r) => setTimeout(r, Math.max(0, 4 * WAIT_MS - (Date.now() - cut))));
      expect((await handle.query(stateQuery)).status).toBe('processing');
      expect(await fs.readFile(path.join(workspace, 'runs.log'), 'utf8')).toBe('t1\nt2\nt3\n');
      const whileGone = (await activities(handle)).slice(before.length);
      expect(whileGone.filter((x) => x.type !== 'callModel')).toEqual([]);
      expect(whileGone.every((x) => x.worker === b.identity)).toBe(true);

      // A new worker on host A: the waiting calls run there, once, and the turn goes on.
      a = await startWorker(taskQueue, { ...common, KEEL_WORKSPACE_HOST: 'host-a' });
      workers.push(a);
      await waitUntil(() => handle.query(stateQuery), (s) => s.session.turns === 4 && s.status !== 'processing', 120_000, 'turn t4');
      expect(Date.now() - cut).toBeGreaterThanOrEqual(4 * WAIT_MS);
      const back = toolResults(standin.requests, 't4');
      expect(back.map((r) => r.is_error ?? false)).toEqual([false, false]);
      expect(back[1]!.content).toContain('host A notes');
      expect(await fs.readFile(path.join(workspace, 'runs.log'), 'utf8')).toBe('t1\nt2\nt3\nt4\n');
      expect((await handle.query(stateQuery)).waiting ?? null).toBeNull();
      await turn('t5', 5);
      expect(await fs.readFile(path.join(workspace, 'runs.log'), 'utf8')).toBe('t1\nt2\nt3\nt4\nt5\n');
      const after = (await activities(handle)).slice(before.length + whileGone.length).filter((x) => x.type === 'runTool');
      expect(after.map((x) => x.worker)).toEqual(Array<string>(4).fill(a.identity));

      // A setup taken by host A's worker, which dies before it answers (frozen with its polls open,
      // then killed): tried again on host A's next worker as soon as its heartbeat is missed, not at
      // the setup's two-minute start-to-close (a goal of the fleet run started two minutes late so).
      const hostAQueue = `${taskQueue}@host-a`;
      await waitUntil(() => pollersOf(hostAQueue), (ids) => ids.includes(a.identity), 60_000, "host A's activity poll");
      process.kill(a.child.pid!, 'SIGSTOP');
      const late = await env.client.workflow.start(sessionWorkflow, {
        taskQueue,
        workflowId: `${taskQueue}-lost-setup`,
        args: [{ workspace, workspaceHost: 'host-a', workspaceHostWaitMs: WAIT_MS }],
      });
      const taken = await waitUntil(() => late.describe().then((d) => d.raw.pendingActivities ?? []), (p) => p.some((x) => x.activityType?.name === 'prepareSetup' && workerOf(x.lastWorkerIdentity) === a.identity), 60_000, "the setup taken by host A's frozen worker");
      expect(taken.map((x) => x.activityType?.name)).toEqual(['prepareSetup']);
      await kill(a);
      const killed = Date.now();
      a = await startWorker(taskQueue, { ...common, KEEL_WORKSPACE_HOST: 'host-a' });
      workers.push(a);
      await waitUntil(() => late.query(stateQuery), (s) => s.status !== 'initializing', 150_000, 'the setup on the new worker');
      expect(Date.now() - killed).toBeLessThan(60_000);
      expect((await activities(late)).filter((x) => x.type === 'prepareSetup')).toEqual([{ type: 'prepareSetup', queue: hostAQueue, worker: a.identity }]);
      await late.terminate('test over');

      // A session whose workspace host never polls waits at start, saying which host (it is not failed).
      const orphan = await env.client.workflow.start(sessionWorkflow, {
        taskQueue,
        workflowId: `${taskQueue}-orphan`,
        args: [{ workspace, workspaceHost: 'host-c', workspaceHostWaitMs: WAIT_MS }],
      });
      const orphanState = await waitUntil(() => orphan.query(stateQuery).catch(() => null), (s) => (s?.waiting ?? '').includes('workspace host "host-c"'), 60_000, 'the wait for host C');
      expect(orphanState!.status).toBe('initializing');
      expect(orphanState!.waiting).toContain(`workspace host "host-c" is not polling task queue "${taskQueue}@host-c"`);
      await orphan.terminate('test over');
    } finally {
      await Promise.all(workers.map(kill));
      await standin.close();
    }
  }, 180_000);
});
