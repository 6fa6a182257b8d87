// A workspace host that never comes back is replaced by an operator: `keel host move`. Host A
// (a worker with KEEL_WORKSPACE_HOST=host-a) runs a session's tools on its disk; host B runs
// in a mount namespace of its own where A's disk is an empty tmpfs, as another machine sees
// it. A is killed for good while the session's next turn waits for it. `keel host move host-a
// host-b --source <where A's files are readable on B>` (the compiled CLI): the files are
// copied onto B's disk, and the waiting tool calls run there, once, with the files — the
// command that waited for A is not run twice (B's runs.log has it once; A's disk never sees
// it). With `--files lost`: the run goes on in an empty workspace on B, its log says in
// words that the workspace was lost in the move, and its agent is told (a steer in the waiting turn). Before this, there was no such command:
// the runs waited for host A until the infrastructure horizon gave up.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandin } from '../../standin/server';
import { eventsQuery, stateQuery, userMessageUpdate } from '../../workflows/definitions';
import { sessionWorkflow } from '../../workflows/session';
import { say, waitUntil } from '../fixtures/session-harness';
import { recordHistoryIn, uniqueTaskQueue } from '../helpers/temporal';
import { cliEnv, keel } from '../fixtures/client-cli';
import { activitiesOf, command, killHostWorker, startHostWorker, toolResults, viewOf, type WorkerProcess } from '../fixtures/host-workers';
import { useTemporal } from '../fixtures/use-temporal';

const WAIT_MS = 3_000;

const fixture = useTemporal();
const { env } = fixture;
let scratch: string;

beforeAll(async () => {
  scratch = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-host-move-')));
});

afterAll(async () => {
  if (scratch) await fs.rm(scratch, { recursive: true, force: true });
});

describe('keel host move', () => {
  it("moves a dead host's sessions to another host: with their files (the waiting call runs once, there), or declared lost (the log says so)", async () => {
    const standin = await startStandin({
      scenario: { rules: [...['t1', 't2', 't3', 'u1', 'u2'].map((t) => ({ match: { lastUserContains: `${t} go`, hasToolResults: false }, reply: command(t) })), { match: { hasToolResults: true }, reply: say('Done.') }] },
    });
    const taskQueue = uniqueTaskQueue('host-move');
    const disk = path.join(scratch, 'disk-of-host-a');
    const ws1 = path.join(disk, 'ws1');
    const ws2 = path.join(disk, 'ws2');
    for (const ws of [ws1, ws2]) {
      await fs.mkdir(ws, { recursive: true });
      await fs.writeFile(path.join(ws, 'notes.md'), `host A notes of ${path.basename(ws)}\n`);
    }
    const common = { ANTHROPIC_BASE_URL: standin.url, KEEL_STORE_DIR: path.join(scratch, 'shared-store') };
    const workers: WorkerProcess[] = [];
    const cli = cliEnv(taskQueue);
    try {
      const startB = startHostWorker(env.address, taskQueue, fixture.bundleFile, { ...common, KEEL_WORKSPACE_HOST: 'host-b' }, disk);
      const startA = startHostWorker(env.address, taskQueue, fixture.bundleFile, { ...common, KEEL_WORKSPACE_HOST: 'host-a' });
      for (const r of await Promise.allSettled([startB, startA])) if (r.status === 'fulfilled') workers.push(r.value);
      const [b, a1] = await Promise.all([startB, startA]);

      const start = (id: string, workspace: string) =>
        env.client.workflow.start(sessionWorkflow, { taskQueue, workflowId: `${taskQueue}-${id}`, args: [{ workspace, workspaceHost: 'host-a', workspaceHostWaitMs: WAIT_MS, policy: { mode: 'full-auto' } }] });
      const turnDone = (handle: WorkflowHandle, n: number, what: string) =>
        waitUntil(() => handle.query(stateQuery).catch(() => null), (s) => s !== null && s.session.turns === n && s.status !== 'processing', 90_000, what);
      const turn = async (handle: WorkflowHandle, t: string, n: number) => {
        await handle.executeUpdate(userMessageUpdate, { args: [{ text: `${t} go` }] });
        await turnDone(handle, n, `turn ${t}`);
      };
      const waitForHostA = (handle: WorkflowHandle) =>
        waitUntil(() => handle.query(stateQuery), (s) => /^waiting for workspace host "host-a" since /.test(s.waiting ?? ''), 60_000, 'the wait for host A');
      const moves = async (handle: WorkflowHandle) => (await handle.query(eventsQuery)).entries.filter((e) => e.kind === 'workspace.moved');

      // A session on a workspace every worker shares: no host to move, so the command leaves it alone.
      const shared = path.join(scratch, 'shared-ws');
      await fs.mkdir(shared);
      const s0 = await env.client.workflow.start(sessionWorkflow, { taskQueue, workflowId: `${taskQueue}-s0`, args: [{ workspace: shared, policy: { mode: 'full-auto' } }] });
      await waitUntil(() => s0.query(stateQuery), (s) => s.status === 'active', 60_000, 'the shared session');

      // ---- with the files ----------------------------------------------------------------
      const s1 = await start('s1', ws1);
      await turn(s1, 't1', 1);
      expect(await fs.readFile(path.join(ws1, 'runs.log'), 'utf8')).toBe('t1\n');
      // Host A dies for good, with a turn waiting for it; its disk is readable on B under a mount point.
      await killHostWorker(a1);
      const mount = path.join(scratch, 'old-disk-of-a-mounted-on-b');
      await fs.cp(ws1, path.join(mount, ws1), { recursive: true });
      await s1.executeUpdate(userMessageUpdate, { args: [{ text: 't2 go' }] });
      await waitForHostA(s1);
      const moved = await keel(['host', 'move', 'host-a', 'host-b', '--source', mount], cli);
      expect(moved.stderr).toBe('');
      expect(moved.code).toBe(0);
      expect(moved.stdout).toContain(`session ${s1.workflowId}: workspace ${ws1} moved from host "host-a" to "host-b" with its files (2 copied from ${mount}${ws1})`);
      expect(moved.stdout).toMatch(/^1 run moved from host "host-a" to "host-b"; 1 running elsewhere \(move move-[0-9a-f-]+\)$/m);
      await turnDone(s1, 2, 'turn t2 on host B');
      // The calls that waited for A ran on B, once, with A's files.
      const t2 = toolResults(standin.requests, 't2');
      expect(t2.map((r) => r.is_error ?? false)).toEqual([false, false]);
      expect(t2[0]!.content).toContain('exit code 0');
      expect(t2[1]!.content).toContain('host A notes of ws1');
      expect(await fs.readFile(viewOf(b, path.join(ws1, 'runs.log')), 'utf8')).toBe('t1\nt2\n');
      expect(await fs.readFile(path.join(ws1, 'runs.log'), 'utf8')).toBe('t1\n');
      const ranT2 = (await activitiesOf(s1)).filter((x) => x.type === 'runTool').slice(2);
      expect(ranT2.map((x) => [x.queue, x.worker])).toEqual(Array(2).fill([`${taskQueue}@host-b`, b.identity]));
      expect(await moves(s1)).toMatchObject([{ from: 'host-a', to: 'host-b', files: 'copy', source: mount, copied: 2 }]);
      expect((await s1.query(stateQuery)).waiting ?? null).toBeNull();
      // And later turns stay on B.
      await turn(s1, 't3', 3);
      expect(await fs.readFile(viewOf(b, path.join(ws1, 'runs.log')), 'utf8')).toBe('t1\nt2\nt3\n');

      // ---- declared lost -----------------------------------------------------------------
      const a2 = await startHostWorker(env.address, taskQueue, fixture.bundleFile, { ...common, KEEL_WORKSPACE_HOST: 'host-a' });
      workers.push(a2);
      const s2 = await start('s2', ws2);
      await turn(s2, 'u1', 1);
      await killHostWorker(a2);
      await s2.executeUpdate(userMessageUpdate, { args: [{ text: 'u2 go' }] });
      await waitForHostA(s2);
      const lost = await keel(['host', 'move', 'host-a', 'host-b', '--files', 'lost'], cli);
      expect(lost.code).toBe(0);
      const lostLine = `workspace ${ws2} was lost in a host move from "host-a" to "host-b": its files are gone, and the run goes on in an empty workspace on "host-b"`;
      expect(lost.stdout).toContain(`session ${s2.workflowId}: ${lostLine}`);
      // s1 is on host B already: not moved again.
      expect(lost.stdout).toContain(`session ${s1.workflowId}: already on host "host-b"`);
      expect(lost.stdout).toMatch(/^1 run moved from host "host-a" to "host-b" \(files declared lost\); 1 running elsewhere/m);
      await turnDone(s2, 2, 'turn u2 on host B');
      const u2 = toolResults(standin.requests, 'u2');
      expect(u2[0]!.content).toContain('exit code 0');
      expect(u2[1]).toMatchObject({ is_error: true });
      expect(await fs.readFile(viewOf(b, path.join(ws2, 'runs.log')), 'utf8')).toBe('u2\n');
      expect(await moves(s2)).toMatchObject([{ files: 'lost', message: lostLine }]);
      // The agent is told, in the turn that was waiting: the model call after the calls that ran on B carries the word.
      const told = standin.requests.filter((r) => JSON.stringify(r.body).includes('u2 >> runs.log') && JSON.stringify(r.body).includes('tool_result')).at(0);
      expect(JSON.stringify(told?.body)).toContain(`[Keel] Your workspace ${ws2} was lost: its host \\"host-a\\" went away`);
      // s1's files came along: its agent heard nothing.
      expect(standin.requests.filter((r) => JSON.stringify(r.body).includes('was lost: its host'))).toSatisfy((rs: typeof standin.requests) => rs.every((r) => !JSON.stringify(r.body).includes('t3 go')));
      expect(await moves(s1)).toHaveLength(1);
      expect(await moves(s0)).toEqual([]);
      // Histories of a move with the files and of a lost one, for the replay test (with KEEL_RECORD_HISTORIES=1).
      await recordHistoryIn('session', s1, 'host-move-copy');
      await recordHistoryIn('session', s2, 'host-move-lost-told');
      await s0.terminate('test over');
    } finally {
      await Promise.all(workers.map(killHostWorker));
      await standin.close();
    }
  }, 300_000);
});
