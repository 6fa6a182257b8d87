// Beyond one machine: two Keel workers, each a process with its own local directory
// (KEEL_STORE_DIR, as two hosts without a shared disk would have), sharing a PostgreSQL
// conversation store (KEEL_STORE_URL; a real server from initdb). Sessions and a goal run
// across them; the worker running a model call is killed with SIGKILL mid-turn. Every turn
// and the goal complete on the survivor, which reads the conversations the dead one
// stored: 0 messages lost (each session's last request carries all of them, and no
// conversation needed repair), 0 tool runs twice (each command appends its mark once).
// `npm run test:e2e -- failover` runs 3 sessions × 3 turns and one goal; the size
// (6 × 6, 3 goals) is `npm run test:failover`. Not part of `npm test`: the short fleet
// (test/integration/fleet.test.ts) kills a worker of two with their own disks and a shared
// PostgreSQL store mid-run and checks the same figures (0 lost, 0 twice).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandin } from '../../standin/server';
import { eventsQuery, stateQuery, userMessageUpdate, type LogEntry } from '../../workflows/definitions';
import { goalWorkflow } from '../../workflows/goal';
import { sessionWorkflow } from '../../workflows/session';
import { critic, FAST_MODEL, KEY, makeWorkspace, plan, planner, review, task, waitUntil, writesFile } from '../fixtures/goal-harness';
import { say, use } from '../fixtures/session-harness';
import { startPostgres, type TestPostgres } from '../helpers/postgres';
import { uniqueTaskQueue } from '../helpers/temporal';
import { compiledWorker } from '../fixtures/compiled-cli';
import { killWhenTestEnds } from '../fixtures/child-teardown';
import { useTemporal } from '../fixtures/use-temporal';

// The worker process, compiled once for the run (tsx transpiled it again at every start).
const sessionWorker = await compiledWorker('session-worker');

const here = path.dirname(fileURLToPath(import.meta.url));
const SESSIONS = Number(process.env.KEEL_FAILOVER_SESSIONS ?? 3);
const TURNS = Number(process.env.KEEL_FAILOVER_TURNS ?? 3);
const GOALS = Number(process.env.KEEL_FAILOVER_GOALS ?? 1);
/** 4 minutes for CI's 3 × 3; the size gets as much more as it has turns. */
const TEST_TIMEOUT_MS = 240_000 * Math.max(1, (SESSIONS * TURNS) / 9);
/** The turn during which a worker is killed. */
const KILL_TURN = Math.min(2, TURNS);

const fixture = useTemporal();
const { env } = fixture;
let pg: TestPostgres;

beforeAll(async () => {
  pg = await startPostgres();
}, 180_000);

afterAll(async () => {
  await pg?.stop();
});

interface WorkerProcess {
  child: ChildProcess;
  host: string;
  output: string[];
}

function startWorker(taskQueue: string, extra: NodeJS.ProcessEnv): Promise<WorkerProcess> {
  const child = killWhenTestEnds(spawn(sessionWorker[0], [sessionWorker[1], env.address, taskQueue, fixture.bundleFile], {
    cwd: path.join(here, '../..'),
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ANTHROPIC_API_KEY: KEY, ...extra },
  }));
  const output: string[] = [];
  return new Promise((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      output.push(chunk.toString());
      if (chunk.toString().includes('worker ready')) resolve({ child, host: `${child.pid}@${os.hostname()}`, output });
    });
    child.once('exit', (code) => reject(new Error(`worker exited with ${code}: ${output.join('')}`)));
  });
}

async function kill(worker: WorkerProcess): Promise<void> {
  if (worker.child.exitCode !== null || worker.child.signalCode !== null) return;
  const exited = new Promise((resolve) => worker.child.once('exit', resolve));
  worker.child.kill('SIGKILL');
  await exited;
}

const mark = (s: number, t: number) => `s${s}t${t}`;
const texts = (body: unknown): string[] =>
  ((body as { messages?: { content: string | { type: string; text?: string }[] }[] }).messages ?? []).flatMap((m) =>
    typeof m.content === 'string' ? [m.content] : m.content.filter((b) => b.type === 'text').map((b) => b.text ?? ''),
  );

describe('failover with a shared PostgreSQL store', () => {
  it(`${SESSIONS} sessions × ${TURNS} turns and ${GOALS} goal(s) across two workers with their own disks; SIGKILL one mid-turn: all complete, 0 lost, 0 run twice`, async () => {
    const storeUrl = await pg.createDatabase('failover');
    const slow = { delayMs: 40, chunkSize: 8 };
    const standin = await startStandin({
      scenario: {
        rules: [
          { match: planner(), reply: plan([task('code', 'Code', 'Write slugify.mjs.'), task('explain', 'Explain', 'Explain it.', { dependencies: ['code'] })]) },
          ...writesFile('code', 'slugify.mjs', 'export const slugify = (s) => s.toLowerCase();\n'),
          ...writesFile('explain', 'EXPLAIN.md', 'It lower-cases.\n'),
          { match: critic(), reply: review('pass', 'Both files are there.') },
          // Each turn runs one command that appends its mark; the answer after it streams for a few seconds.
          ...Array.from({ length: SESSIONS * TURNS }, (_, k) => {
            const m = mark(Math.floor(k / TURNS) + 1, (k % TURNS) + 1);
            return { match: { lastUserContains: `${m} go`, hasToolResults: false }, reply: use('run_command', { command: `echo ${m} >> runs.log` }) };
          }),
          // The answer of the turn the worker dies in streams longer (a session's requests
          // in turn t are its 2t-th), so the test finds it in flight after every command ended.
          { match: { hasToolResults: true, turn: 2 * KILL_TURN }, reply: { ...say(`${'Done. '.repeat(40)}`), delayMs: 150, chunkSize: 8 } },
          { match: { hasToolResults: true }, reply: { ...say(`${'Done. '.repeat(40)}`), ...slow } },
        ],
      },
    });
    const taskQueue = uniqueTaskQueue('failover');
    const dirs = await Promise.all([0, 1].map(() => fs.mkdtemp(path.join(os.tmpdir(), 'keel-failover-disk-'))));
    const workspaces = await Promise.all(Array.from({ length: SESSIONS + GOALS }, () => makeWorkspace('keel-failover-ws-')));
    const workers: WorkerProcess[] = [];
    try {
      for (const dir of dirs) {
        workers.push(await startWorker(taskQueue, { ANTHROPIC_BASE_URL: standin.url, KEEL_STORE_URL: storeUrl, KEEL_STORE_DIR: dir }));
      }
      // Both saw the same store: the second found the first's marker.
      expect(workers[0]!.output.join('')).toMatch(/conversation store: postgres postgres:\/\/keel@127\.0\.0\.1:\d+\/failover \(id [0-9a-f-]+, marked by this worker/);
      expect(workers[1]!.output.join('')).toMatch(/conversation store: postgres postgres:\/\/keel@127\.0\.0\.1:\d+\/failover \(id [0-9a-f-]+\)\n/);

      const modelActivity = { heartbeatTimeout: '3 seconds' };
      const goals = await Promise.all(
        Array.from({ length: GOALS }, (_, g) =>
          env.client.workflow.start(goalWorkflow, {
            taskQueue,
            workflowId: `${taskQueue}-goal-${g}`,
            args: [{ goal: 'slugify, explained', workspace: workspaces[SESSIONS + g]!, autoApprove: true, policy: { mode: 'full-auto' }, modelActivity: { ...FAST_MODEL, ...modelActivity } }],
          }),
        ),
      );
      const sessions = await Promise.all(
        Array.from({ length: SESSIONS }, (_, i) =>
          env.client.workflow.start(sessionWorkflow, { taskQueue, workflowId: `${taskQueue}-s${i + 1}`, args: [{ workspace: workspaces[i]!, policy: { mode: 'full-auto' }, modelActivity }] }),
        ),
      );
      let victim: WorkerProcess | undefined;
      const started = Date.now();
      let killedAt = 0;
      let recoveredMs = 0;
      for (let t = 1; t <= TURNS; t++) {
        await Promise.all(sessions.map((h, i) => h.executeUpdate(userMessageUpdate, { args: [{ text: `${mark(i + 1, t)} go` }] })));
        if (t === KILL_TURN) {
          // Mid-turn: kill the worker streaming a session's answer — once every command of
          // the turn has ended. A command runs at most once, so one cut by the kill ends as
          // worker_lost without its mark (under load, commands take long enough for the
          // kill to land in one: a lost mark, which is not what this test is about).
          await waitUntil(
            async () => {
              const marks = await Promise.all(sessions.map((_, i) => fs.readFile(path.join(workspaces[i]!, 'runs.log'), 'utf8').catch(() => '')));
              if (!marks.every((m, i) => m.includes(`${mark(i + 1, t)}\n`))) return false;
              const pending = await Promise.all(sessions.map(async (h) => (await h.describe()).raw.pendingActivities ?? []));
              return pending.every((p) => !p.some((a) => a.activityType?.name === 'runTool'));
            },
            (done) => done,
            60_000,
            `the commands of turn ${t}`,
          );
          const runningOn = await waitUntil(
            async () => {
              for (const h of sessions) {
                const pending = (await h.describe()).raw.pendingActivities ?? [];
                const call = pending.find((a) => a.activityType?.name === 'callModel' && a.lastWorkerIdentity);
                if (call) return (call.lastWorkerIdentity ?? '').replace(/^keel-store=\S+ /, '');
              }
              return '';
            },
            (id) => id !== '',
            60_000,
            'a model call in flight',
          );
          victim = workers.find((w) => w.host === runningOn);
          expect(victim, `the model call runs on ${runningOn}`).toBeDefined();
          await kill(victim!);
          killedAt = Date.now();
        }
        for (const h of sessions) {
          // A query can fail while the workflow's sticky worker is the dead one (until the
          // server gives its task to the other): asked again.
          await waitUntil(
            () => h.query(stateQuery).catch(() => null),
            (v) => v !== null && v.session.turns === t && v.status !== 'processing',
            120_000,
            `turn ${t} of ${h.workflowId}`,
          );
        }
        if (t === KILL_TURN) recoveredMs = Date.now() - killedAt;
      }
      const reports = await Promise.all(goals.map((g) => g.result()));
      expect(reports.map((r) => r.verdict)).toEqual(goals.map(() => 'goal_met'));
      const survivor = workers.find((w) => w !== victim)!;
      expect(survivor.child.exitCode).toBeNull();

      // The figures, before the checks: messages lost, commands run twice, repairs.
      let lost = 0;
      let twice = 0;
      let repairs = 0;
      for (const [i, h] of sessions.entries()) {
        const runs = (await fs.readFile(path.join(workspaces[i]!, 'runs.log'), 'utf8')).split('\n').filter(Boolean);
        twice += runs.length - new Set(runs).size;
        const said = texts(standin.requests.filter((r) => JSON.stringify(r.body).includes(`${mark(i + 1, 1)} go`)).at(-1)!.body);
        lost += Array.from({ length: TURNS }, (_, t) => `${mark(i + 1, t + 1)} go`).filter((m) => !said.includes(m)).length;
        lost += Math.max(0, TURNS - 1 - said.filter((x) => x.startsWith('Done.')).length);
        repairs += ((await h.query(eventsQuery, { from: 0, limit: 500 })).entries).filter((e) => e.kind === 'conversation.repaired').length;
      }
      console.log(
        `failover: ${SESSIONS} sessions × ${TURNS} turns and ${GOALS} goal(s); SIGKILL of pid ${victim?.child.pid} in turn ${KILL_TURN}; ` +
          `that turn done in every session ${(recoveredMs / 1000).toFixed(1)} s after the kill; goals met ${reports.filter((r) => r.verdict === 'goal_met').length}/${GOALS}; ` +
          `messages lost ${lost}, commands run twice ${twice}, repairs ${repairs}; ${((Date.now() - started) / 1000).toFixed(1)} s from the first start`,
      );
      expect([lost, twice, repairs]).toEqual([0, 0, 0]);

      for (const [i, h] of sessions.entries()) {
        const state = await h.query(stateQuery);
        expect([state.status, state.session.turns]).toEqual(['active', TURNS]);
        const log = (await h.query(eventsQuery, { from: 0, limit: 500 })).entries as (LogEntry & Record<string, unknown>)[];
        expect(log.filter((e) => e.kind === 'turn.error' || e.kind === 'conversation.repaired')).toEqual([]);
        // 0 run twice: each command's mark once, in order.
        const runs = await fs.readFile(path.join(workspaces[i]!, 'runs.log'), 'utf8');
        expect(runs).toBe(Array.from({ length: TURNS }, (_, t) => `${mark(i + 1, t + 1)}\n`).join(''));
        // 0 lost: the session's last request carried every user message and every answer.
        const last = standin.requests.filter((r) => JSON.stringify(r.body).includes(`${mark(i + 1, 1)} go`)).at(-1)!;
        const said = texts(last.body);
        for (let t = 1; t <= TURNS; t++) expect(said).toContain(`${mark(i + 1, t)} go`);
        expect(said.filter((s) => s.startsWith('Done.'))).toHaveLength(TURNS - 1);
      }
    } finally {
      await Promise.all(workers.map(kill));
      await standin.close();
      for (const d of [...dirs, ...workspaces]) await fs.rm(d, { recursive: true, force: true });
    }
  }, TEST_TIMEOUT_MS);
});
