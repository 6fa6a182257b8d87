// A Keel fleet under faults (issue 45): N worker processes, each on its own workspace root
// and host name (KEEL_WORKSPACE_HOST), one shared PostgreSQL store (a cluster started here
// with initdb/pg_ctl on a free port), the Temporal dev server on a database file, the model
// stand-in, and `keel serve`. G goals and S sessions run while the faults of
// bench/fleet/schedule.ts strike; every session's tool calls ask for approval, answered in
// turn through the SDK, the HTTP API and `temporal workflow signal`. After each fault a canary
// turn on every host it touched measures how long the fleet takes to recover. When all is
// quiet it reads the outcome of every run, every workspace's side-effect log (fx.log: a line
// found twice is a command run twice), every history's workflow task failures.
//
// `npm run fleet` (bench/fleet.ts) runs it at full size; test/integration/fleet.test.ts a short one.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import os from 'node:os';
import { promisify } from 'node:util';
import { setMaxListeners } from 'node:events';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { KeelClient } from '../../client/keel-client';
import type { GoalHandle } from '../../client/goal-handle';
import type { SessionHandle } from '../../client/session-handle';
import { startStandin, type Standin } from '../../standin/server';
import { type DevServer, resolveTemporalCli } from '../../worker/dev-server';
import { diesWithParent } from '../../worker/dies-with-parent';
import { KEEL_BUNDLE_OPTIONS } from '../../worker/worker';
import { goalEventsQuery } from '../../workflows/definitions';
import { startPostgres, type TestPostgres } from '../../test/helpers/postgres';
import { isTransient, serverWithin } from '../../test/chaos/chaos';
import { seededRandom } from '../../test/chaos/model-faults';
import { Children, sleep } from '../../test/chaos/patience';
import { canaryMessage, fleetScenario, SIDE_EFFECT_LOG, TURN_ANSWER, turnMessage } from './scenario';
import { type Fault, faultSchedule, type ScheduleOptions } from './schedule';

const execFileAsync = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const TOKEN = 'keel_fleet_token_0123456789abcdef';

export interface FleetOptions extends Omit<ScheduleOptions, 'workers'> {
  workers: number;
  goals: number;
  sessions: number;
  /** Turns per session (each one command that asks for approval). */
  turns: number;
  /** How long after the fault window the runs may take to finish before the rest count as stuck. */
  quietMs: number;
  /** The compiled `keel` CLI (test/fixtures/compiled-cli.ts): `serve` and, beside it, keel-worker.js (worker/main.ts). */
  cli: string;
  /** A workflow bundle already built; absent: bundled here. */
  bundleFile?: string;
  log?: (line: string) => void;
  signal?: AbortSignal;
  /** Keep the run's directory even when it passes (a failed run's is always kept). */
  keep?: boolean;
}

export interface FaultRecord extends Fault {
  /** Wall-clock times (ms since the window opened) it struck and its service was back; null: never back. */
  struckMs: number | null;
  backMs: number | null;
  /** From back to the canary turn done on every host it touched; null: not recovered within the horizon. */
  recoveredMs: number | null;
  hosts: string[];
  note?: string;
}

export interface FleetResult {
  seed: number;
  workers: number;
  goals: { total: number; met: number; stopped: string[]; failed: string[]; stuck: string[]; needsHuman: string[] };
  /** Workers that exited by themselves (not killed by the harness), started again. */
  workerExits: string[];
  sessions: { total: number; turnsExpected: number; turnsAnswered: number; allAnswered: number; failed: string[]; stuck: string[]; needsHuman: string[] };
  messages: { sent: number; lost: string[] };
  approvals: { sdk: number; http: number; signal: number; retried: number };
  sideEffects: { commandsLogged: number; twice: string[]; missing: string[]; toolCallsWithoutOneResult: string[] };
  workflowTaskFailures: { total: number; byCause: Record<string, number>; timedOut: number; histories: number };
  /** The workers' replay repairs (worker/replay-repair-sweep.ts): runs the SDK could not replay, reset, or left to a human. */
  replayRepairs: { reset: string[]; left: string[] };
  faults: FaultRecord[];
  /** Runs that waited for a service (infra.waiting events) and what they waited for. */
  waited: Record<string, number>;
  durationMs: number;
  failedChecks: string[];
  pass: boolean;
}

interface Worker {
  index: number;
  host: string;
  workspaces: string;
  storeDir: string;
  child: ChildProcess | null;
  /** Down on purpose (killed, not yet started again). */
  down: boolean;
}

export async function runFleet(o: FleetOptions): Promise<FleetResult> {
  const log = o.log ?? (() => {});
  const began = Date.now();
  const { signal } = o;
  const random = seededRandom(o.seed ^ 0x2545f491);
  const between = (lo: number, hi: number) => lo + random() * (hi - lo);
  const children = new Children();
  const onAbort = () => children.killAll();
  // Every session's driver and every wait in flight sleeps on the run's signal: many at once is expected.
  if (signal) setMaxListeners(0, signal);
  signal?.addEventListener('abort', onAbort, { once: true });
  const dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-fleet-')));
  // The workers and sessions of a root run commands as the workspace's owner: the tree must be reachable.
  await fs.chmod(dir, 0o755);
  const dbFile = path.join(dir, 'temporal.db');
  const schedule = faultSchedule(o);
  const faults: FaultRecord[] = schedule.map((f) => ({ ...f, struckMs: null, backMs: null, recoveredMs: null, hosts: [] }));
  const result: FleetResult = {
    seed: o.seed,
    workers: o.workers,
    goals: { total: o.goals, met: 0, stopped: [], failed: [], stuck: [], needsHuman: [] },
    workerExits: [],
    sessions: { total: o.sessions, turnsExpected: o.sessions * o.turns, turnsAnswered: 0, allAnswered: 0, failed: [], stuck: [], needsHuman: [] },
    messages: { sent: 0, lost: [] },
    approvals: { sdk: 0, http: 0, signal: 0, retried: 0 },
    sideEffects: { commandsLogged: 0, twice: [], missing: [], toolCallsWithoutOneResult: [] },
    workflowTaskFailures: { total: 0, byCause: {}, timedOut: 0, histories: 0 },
    replayRepairs: { reset: [], left: [] },
    faults,
    waited: {},
    durationMs: 0,
    failedChecks: [],
    pass: false,
  };
  let server: DevServer | null = null;
  let pg: TestPostgres | null = null;
  let standin: Standin | null = null;
  let keel: KeelClient | null = null;
  const workers: Worker[] = [];
  let windowOpened = Date.now();
  const windowOpenAt = () => windowOpened;
  const sinceOpen = () => Date.now() - windowOpened;
  let checked = false;
  const passed = () => checked && verdictOf(result).length === 0;
  try {
    const bundleFile = o.bundleFile ?? path.join(dir, 'workflows.js');
    const bundled = o.bundleFile
      ? Promise.resolve()
      : bundleWorkflowCode({ ...KEEL_BUNDLE_OPTIONS, logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} } }).then((b) => fs.writeFile(bundleFile, b.code));
    const starting = serverWithin(o.quietMs, { port: 0, dbFile });
    starting.then((s) => (server = s)).catch(() => undefined);
    const pgStarting = startPostgres();
    pgStarting.then((p) => (pg = p)).catch(() => undefined);
    const [s0, p0, cliPath] = await Promise.all([starting, pgStarting, resolveTemporalCli(), bundled]);
    server = s0;
    pg = p0;
    const temporalCli = cliPath;
    const address = server.address;
    const namespace = server.namespace;
    const port = Number(address.slice(address.lastIndexOf(':') + 1));
    const storeUrl = await pg.createDatabase('fleet');
    const canaryCount = faults.length * o.workers + o.workers;
    standin = await startStandin({ scenario: fleetScenario(o.turns, canaryCount) });
    const taskQueue = `fleet-${o.seed}-${Date.now()}`;
    log(`fleet: ${o.workers} workers, ${o.goals} goals, ${o.sessions} sessions × ${o.turns} turns, seed ${o.seed}; Temporal ${address}, PostgreSQL :${pg.port}, stand-in ${standin.url}, dir ${dir}`);

    // ---- the workers: worker/main.ts compiled, each its own host and disk ----
    const workerEntry = path.join(path.dirname(o.cli), 'keel-worker.js');
    const startWorker = async (w: Worker): Promise<void> => {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        TEMPORAL_ADDRESS: address,
        TEMPORAL_NAMESPACE: namespace,
        KEEL_TASK_QUEUE: taskQueue,
        KEEL_STORE_URL: storeUrl,
        KEEL_STORE_DIR: w.storeDir,
        KEEL_WORKSPACE_HOST: w.host,
        KEEL_WORKFLOW_BUNDLE: bundleFile,
        ANTHROPIC_API_KEY: 'sk-ant-fleet',
        ANTHROPIC_BASE_URL: standin!.url,
      };
      // tsx for the one file the worker loads by path at run time (its payload converter, workflows/payload-converter.ts).
      const [command, args] = diesWithParent(process.execPath, ['--import', 'tsx', workerEntry]);
      const child = spawn(command, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
      children.add(child);
      w.child = child;
      let output = '';
      // Every worker's output, kept with the run's directory when it fails (--keep keeps it always).
      const logFile = createWriteStream(path.join(w.storeDir, '..', 'worker.log'), { flags: 'a' });
      logFile.write(`---- started at ${new Date().toISOString()} (pid ${child.pid})\n`);
      child.stdout.on('data', (c: Buffer) => logFile.write(c));
      child.stderr.on('data', (c: Buffer) => logFile.write(c));
      child.once('close', () => logFile.end());
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (c: Buffer) => {
          output = (output + c.toString()).slice(-20_000);
          if (output.includes('keel worker: polling task queue')) resolve();
        });
        child.stderr.on('data', (c: Buffer) => (output = (output + c.toString()).slice(-20_000)));
        child.once('exit', (code, sig) => reject(new Error(`worker ${w.host} exited (${code ?? sig}) before polling: ${output.slice(-2000)}`)));
      });
      child.stdout.resume();
      child.stderr.resume();
      w.down = false;
      // A worker that ends by itself is started again, as a supervisor (systemd, a container
      // runtime) would; each such exit is a finding of the run.
      child.once('exit', (code, sig) => {
        if (w.down || w.child !== child || signal?.aborted) return;
        w.down = true;
        result.workerExits.push(`${w.host} exited (${code ?? sig}) by itself at ${(sinceOpen() / 1000).toFixed(1)} s: ${output.slice(-500)}`);
        log(`  ${w.host} exited by itself (${code ?? sig}); starting it again`);
        void bringUp(w).catch(() => undefined);
      });
    };
    /** Starts a worker, and again while it exits before polling (each such exit counted), until the horizon. */
    const bringUp = async (w: Worker): Promise<void> => {
      for (;;) {
        try {
          return await startWorker(w);
        } catch (error) {
          if (signal?.aborted || Date.now() > windowOpenAt() + o.windowMs + o.quietMs) throw error;
          result.workerExits.push(`${w.host} exited before polling at ${(sinceOpen() / 1000).toFixed(1)} s: ${(error as Error).message.slice(-600)}`);
          log(`  ${w.host} exited before polling; starting it again in 2 s`);
          await sleep(2_000, signal);
        }
      }
    };
    const killWorker = async (w: Worker) => {
      const child = w.child;
      w.down = true;
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    };
    for (let i = 0; i < o.workers; i++) {
      const hostDir = path.join(dir, `host-${i}`);
      const w: Worker = { index: i, host: `host-${i}`, workspaces: path.join(hostDir, 'workspaces'), storeDir: path.join(hostDir, 'store'), child: null, down: true };
      await fs.mkdir(w.workspaces, { recursive: true });
      await fs.chmod(hostDir, 0o755);
      workers.push(w);
    }
    await Promise.all(workers.map(startWorker));
    windowOpened = Date.now();
    log(`fleet: ${o.workers} workers polling`);

    // ---- keel serve: the HTTP API ----
    const serve = spawn(...(diesWithParent(process.execPath, [o.cli, 'serve', '--port', '0', '--workspace', dir])), {
      env: { ...process.env, TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: namespace, KEEL_TASK_QUEUE: taskQueue, KEEL_API_TOKEN: TOKEN, KEEL_API_APPROVER: 'fleet', NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(serve);
    const serveUrl = await new Promise<string>((resolve, reject) => {
      let out = '';
      const take = (c: Buffer) => {
        out += c.toString();
        const found = /console and API on (http:\/\/\S+)/.exec(out)?.[1];
        if (found) resolve(found);
      };
      serve.stdout.on('data', take);
      serve.stderr.on('data', take);
      serve.once('exit', (code) => reject(new Error(`keel serve exited (${code}): ${out.slice(-2000)}`)));
    });
    serve.stdout.resume();
    serve.stderr.resume();

    keel = await KeelClient.connect({ address, namespace, taskQueue, env: {} });
    const client = keel;
    windowOpened = Date.now();
    const windowOpen = windowOpened;
    const deadline = windowOpen + o.windowMs + o.quietMs;
    /** A client call made again while the server is away or busy, until the run's horizon. */
    const retrying = async <T>(call: () => Promise<T>, what: string): Promise<T> => {
      for (let tries = 1; ; tries++) {
        try {
          return await call();
        } catch (error) {
          // A workflow between attempts of a timed-out workflow task ("Workflow Task in failed state", a busy machine) answers later too.
          if (signal?.aborted || !(isTransient(error) || /Workflow Task in failed state/.test(described(error))) || Date.now() > deadline) throw error;
          if (tries % 20 === 1) log(`  (retrying ${what}: ${described(error).slice(0, 200)})`);
          await sleep(1_000, signal);
        }
      }
    };

    // ---- canaries: one full-auto session per host; a turn after each fault measures recovery ----
    const canaries = await Promise.all(
      workers.map(async (w) => {
        const workspace = path.join(w.workspaces, 'canary');
        await fs.mkdir(workspace);
        const handle = await retrying(() => client.startSession({ id: `${taskQueue}-canary-${w.host}`, workspace, workspaceHost: w.host, policy: { mode: 'full-auto' } }), 'start canary');
        return { host: w.host, workspace, handle, posted: 0 };
      }),
    );
    let canarySeq = 0;
    /** Posts a canary turn on each host and waits until every one is done: the time from `from`. */
    const probe = async (hosts: string[], from: number): Promise<number | null> => {
      const waits = hosts.map(async (host) => {
        const c = canaries.find((x) => x.host === host)!;
        const k = ++canarySeq;
        c.posted++;
        const want = c.posted;
        // A message refused (not a server away: retrying() waits those out) is tried a few times more, the reason logged.
        for (let refused = 0; ; refused++) {
          try {
            await retrying(() => c.handle.post(canaryMessage(k), `canary-${k}`), 'canary message');
            break;
          } catch (error) {
            log(`  (canary ${k} on ${host} refused: ${described(error)})`);
            if (refused >= 5 || signal?.aborted) throw error;
            await sleep(5_000, signal);
          }
        }
        for (;;) {
          if (Date.now() > deadline) return null;
          const view = await retrying(() => c.handle.state(), 'canary state').catch(() => null);
          if (view && view.session.turns >= want) return Date.now();
          await sleep(500, signal);
        }
      });
      const done = await Promise.all(waits);
      return done.some((d) => d === null) ? null : Math.max(...(done as number[])) - from;
    };

    // ---- the faults ----
    const faultRuns: Promise<void>[] = [];
    // A fault of every host is measured on the hosts that are up: a host away for minutes would measure its own absence.
    const upHosts = () => workers.filter((w) => !w.down).map((w) => w.host);
    // One PostgreSQL fault at a time: at load 20 a quick restart struck while the stop before
    // it was still starting the server again, and that start failed ("pg_ctl: could not start
    // server"), a fault of the harness, not of the fleet (it failed the old and the new short
    // run alike). The later fault waits for the earlier one's server to be up.
    let pgFaults: Promise<void> = Promise.resolve();
    const strike = async (f: FaultRecord) => {
      const stamp = () => sinceOpen();
      switch (f.kind) {
        case 'worker-kill':
        case 'worker-away': {
          // The scheduled worker, or (when it is down already: away, or not yet back) another one that is up.
          const up = workers.filter((x) => !x.down);
          if (up.length === 0 || (f.kind === 'worker-away' && workers[f.worker!]!.down)) {
            f.note = 'skipped: no worker up to strike';
            return;
          }
          const w = workers[f.worker!]!.down ? up[Math.floor(random() * up.length)]! : workers[f.worker!]!;
          f.worker = w.index;
          f.hosts = [w.host];
          await killWorker(w);
          f.struckMs = stamp();
          log(`  fault ${f.id}: kill -9 ${w.host} (${f.kind === 'worker-away' ? `away ${Math.round(f.downMs / 1000)} s` : `back in ${(f.downMs / 1000).toFixed(1)} s`})`);
          await sleep(f.downMs, signal);
          await bringUp(w);
          break;
        }
        case 'server-restart': {
          f.hosts = upHosts();
          const s = server!;
          s.process.kill('SIGKILL');
          await new Promise((r) => (s.process.exitCode !== null || s.process.signalCode !== null ? r(null) : s.process.once('exit', r)));
          f.struckMs = stamp();
          log(`  fault ${f.id}: kill -9 the Temporal server; restarting it on its database`);
          server = await serverWithin(o.quietMs, { port, dbFile });
          break;
        }
        case 'pg-stop':
        case 'pg-restart': {
          const previous = pgFaults;
          let done!: () => void;
          pgFaults = new Promise<void>((resolve) => (done = resolve));
          try {
            await previous;
            f.hosts = upHosts();
            await pg!.halt();
            f.struckMs = stamp();
            log(`  fault ${f.id}: PostgreSQL stopped for ${(f.downMs / 1000).toFixed(1)} s`);
            await sleep(f.downMs, signal);
            await pg!.resume();
          } finally {
            done();
          }
          break;
        }
      }
      f.backMs = stamp();
      // A fault that struck while every worker was down (killed or away) has no host it can be
      // measured on alone: it is measured on all of them, once they are back, and says so.
      if (f.hosts.length === 0) {
        f.hosts = workers.map((w) => w.host);
        f.note = 'no worker was up when it struck: measured on every host, once back';
      }
      const recovered = await probe(f.hosts, windowOpen + f.backMs);
      f.recoveredMs = recovered;
      log(`  fault ${f.id} (${f.kind}${f.worker !== undefined ? ` ${workers[f.worker]!.host}` : ''}): back at ${(f.backMs / 1000).toFixed(1)} s, recovered ${recovered === null ? 'never' : `in ${(recovered / 1000).toFixed(1)} s`}`);
    };
    const faultLoop = (async () => {
      for (const f of faults) {
        const wait = f.atMs - sinceOpen();
        if (wait > 0) await sleep(wait, signal);
        faultRuns.push(
          strike(f).catch((error: unknown) => {
            f.note = `the harness failed: ${described(error).slice(0, 400)}`;
            log(`  fault ${f.id}: ${f.note}`);
          }),
        );
      }
    })();

    // ---- goals: started over the first 60 % of the window, each on a host ----
    const goalRuns: { id: string; host: string; workspace: string; handle: GoalHandle | null; verdict: string | null }[] = [];
    const goalStarts = (async () => {
      for (let g = 0; g < o.goals; g++) {
        const at = (g / Math.max(1, o.goals)) * 0.6 * o.windowMs;
        const wait = at - sinceOpen();
        if (wait > 0) await sleep(wait, signal);
        const w = workers[g % o.workers]!;
        const workspace = path.join(w.workspaces, `goal-${g}`);
        await fs.mkdir(workspace);
        const id = `${taskQueue}-goal-${g}`;
        const run = { id, host: w.host, workspace, handle: null as GoalHandle | null, verdict: null as string | null };
        goalRuns.push(run);
        run.handle = await retrying(
          () => client.startGoal(`fleet goal ${g}: append run to fx.log, write notes.txt`, { id, workspace, workspaceHost: w.host, policy: { mode: 'full-auto' }, autoApprove: true, headless: true }),
          'start goal',
        ).catch((error: unknown) => {
          result.goals.failed.push(`${id}: did not start: ${(error as Error).message}`);
          return null;
        });
      }
    })();

    // ---- sessions: started over the first half of the window; each turn's command approved by SDK, HTTP or signal ----
    const channels = ['sdk', 'http', 'signal'] as const;
    const approve = async (handle: SessionHandle, callId: string, channel: (typeof channels)[number]) => {
      switch (channel) {
        case 'sdk':
          await handle.approve(callId);
          break;
        case 'http': {
          const res = await fetch(`${serveUrl}/api/workflows/${encodeURIComponent(handle.id)}/approve`, {
            method: 'POST',
            headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
            body: JSON.stringify({ callId }),
          });
          if (!res.ok) throw new Error(`HTTP ${res.status}: ${(await res.text()).slice(0, 200)}`);
          break;
        }
        case 'signal':
          await execFileAsync(temporalCli, ['workflow', 'signal', '--address', address, '--namespace', namespace, '--workflow-id', handle.id, '--name', 'approve', '--input', JSON.stringify({ callId })]);
          break;
      }
      result.approvals[channel]++;
    };
    interface SessionRun {
      id: string;
      host: string;
      workspace: string;
      handle: SessionHandle | null;
      sent: string[];
      answered: number;
      end: 'done' | 'failed' | 'stuck' | 'needs-human' | null;
      reason?: string;
    }
    const sessionRuns: SessionRun[] = [];
    const driveSession = async (s: number) => {
      const startAt = (s / Math.max(1, o.sessions)) * 0.5 * o.windowMs;
      const wait = startAt - sinceOpen();
      if (wait > 0) await sleep(wait, signal);
      const w = workers[s % o.workers]!;
      const workspace = path.join(w.workspaces, `session-${s}`);
      await fs.mkdir(workspace);
      const run: SessionRun = { id: `${taskQueue}-session-${s}`, host: w.host, workspace, handle: null, sent: [], answered: 0, end: null };
      sessionRuns.push(run);
      try {
        const handle = await retrying(() => client.startSession({ id: run.id, workspace, workspaceHost: w.host, policy: { mode: 'ask' } }), 'start session');
        run.handle = handle;
        // Turns spread over what is left of the window.
        const think = Math.max(1_000, (o.windowMs - startAt) / (o.turns + 1));
        const approved = new Map<string, number>();
        for (let t = 1; t <= o.turns; t++) {
          await sleep(between(0.5, 1) * think, signal);
          const text = turnMessage(s, t);
          await retrying(() => handle.post(text, `s${s}-t${t}`), 'message');
          run.sent.push(text);
          result.messages.sent++;
          for (;;) {
            if (Date.now() > deadline) {
              run.end = 'stuck';
              run.reason = `turn ${t} not answered`;
              return;
            }
            const view = await retrying(() => handle.state(), 'session state').catch(() => null);
            if (view) {
              if (view.session.turns >= t && view.turn === null && view.queueLength === 0) break;
              if (view.status === 'suspended' || view.status === 'paused') {
                run.end = 'needs-human';
                run.reason = `${view.status}: ${view.reason ?? ''}`;
                return;
              }
              if (view.status === 'closed' || view.status === 'failed') {
                run.end = 'failed';
                run.reason = `${view.status}: ${view.reason ?? ''}`;
                return;
              }
              for (const p of view.pendingApprovals) {
                const last = approved.get(p.callId);
                // Asked again only when an answer given long ago is still not seen (lost on its way, a server restart).
                if (last !== undefined && Date.now() - last < 20_000) continue;
                if (last !== undefined) result.approvals.retried++;
                approved.set(p.callId, Date.now());
                const channel = channels[(s + t + (last !== undefined ? 1 : 0)) % channels.length]!;
                await approve(handle, p.callId, channel).catch((error: unknown) => log(`  (approval of ${p.callId} in ${run.id} by ${channel} failed: ${described(error).slice(0, 300)})`));
              }
            }
            await sleep(between(1_500, 3_000), signal);
          }
        }
        run.end = 'done';
      } catch (error) {
        if (signal?.aborted) throw error;
        run.end = 'failed';
        run.reason = (error as Error).message.slice(0, 300);
      }
    };
    const sessionDrives = Promise.all(Array.from({ length: o.sessions }, (_, s) => driveSession(s)));
    // Awaited below; an abort before then must not make them unhandled rejections.
    for (const p of [faultLoop, sessionDrives]) p.catch(() => undefined);

    await goalStarts;
    log(`fleet: ${goalRuns.length} goals started at ${(sinceOpen() / 1000).toFixed(0)} s`);
    // ---- goal results ----
    const goalResults = Promise.all(
      goalRuns.map(async (g) => {
        if (!g.handle) return;
        const handle = g.handle;
        const outcome = await Promise.race([
          retrying(() => handle.result(), 'goal result').then(
            (r) => ({ verdict: r.verdict, summary: r.summary }),
            (error: unknown) => ({ verdict: 'failed', summary: (error as Error).message }),
          ),
          sleep(Math.max(0, deadline - Date.now()), signal).then(() => null),
        ]);
        if (outcome === null) {
          const state = await retrying(() => handle.state(), 'goal state').catch(() => null);
          const status = state?.status ?? 'unknown';
          if (status === 'blocked' || status === 'awaiting_plan_approval') result.goals.needsHuman.push(`${g.id}: ${status}`);
          else result.goals.stuck.push(`${g.id}: ${status}`);
          return;
        }
        g.verdict = outcome.verdict;
        if (outcome.verdict === 'goal_met') result.goals.met++;
        else if (outcome.verdict === 'stopped') result.goals.stopped.push(`${g.id}: ${outcome.summary}`);
        else result.goals.failed.push(`${g.id}: ${outcome.summary}`);
      }),
    );
    await Promise.all([goalResults, sessionDrives, faultLoop]);
    await Promise.all(faultRuns);
    log(`fleet: all quiet at ${(sinceOpen() / 1000).toFixed(0)} s; checking`);

    // ---- the checks ----
    for (const s of sessionRuns) {
      if (!s.handle) {
        result.sessions.failed.push(`${s.id}: did not start: ${s.reason ?? ''}`);
        continue;
      }
      const handle = s.handle;
      const page = await retrying(() => handle.transcript(0, 500), 'transcript');
      const users = page.messages.filter((m) => m.role === 'user').map((m) => JSON.stringify(m.content));
      for (const text of s.sent) if (!users.some((c) => c.includes(text))) result.messages.lost.push(`${s.id}: "${text}"`);
      const answers = page.messages.filter((m) => m.role === 'assistant' && JSON.stringify(m.content).includes(TURN_ANSWER)).length;
      s.answered = Math.min(answers, o.turns);
      result.sessions.turnsAnswered += s.answered;
      if (s.end === 'done' && s.answered === o.turns) result.sessions.allAnswered++;
      else if (s.end === 'needs-human') result.sessions.needsHuman.push(`${s.id}: ${s.reason ?? ''}`);
      else if (s.end === 'stuck') result.sessions.stuck.push(`${s.id}: ${s.reason ?? ''}`);
      else result.sessions.failed.push(`${s.id}: ${s.end ?? 'unknown'}: ${s.reason ?? `${s.answered} of ${o.turns} turns answered`}`);
    }
    // A canary is a session too: one whose probes were not all answered is stuck (or failed).
    for (const c of canaries) {
      const view = await retrying(() => c.handle.state(), 'canary state').catch((error: unknown) => described(error));
      if (typeof view === 'string') result.sessions.stuck.push(`${c.handle.id}: does not answer: ${view.slice(0, 300)}`);
      else if (view.session.turns < c.posted) result.sessions.stuck.push(`${c.handle.id}: ${view.session.turns} of ${c.posted} canary turns answered (${view.status})`);
    }
    // Side effects: every line of every workspace's fx.log once.
    const workspaces = [...goalRuns.map((g) => ({ id: g.id, dir: g.workspace, expect: g.verdict === 'goal_met' ? ['run'] : [] })), ...sessionRuns.map((s) => ({ id: s.id, dir: s.workspace, expect: [] as string[] })), ...canaries.map((c) => ({ id: `canary ${c.host}`, dir: c.workspace, expect: [] as string[] }))];
    for (const ws of workspaces) {
      const lines = (await fs.readFile(path.join(ws.dir, SIDE_EFFECT_LOG), 'utf8').catch(() => '')).split('\n').filter(Boolean);
      result.sideEffects.commandsLogged += lines.length;
      const counts = new Map<string, number>();
      for (const l of lines) counts.set(l, (counts.get(l) ?? 0) + 1);
      for (const [line, n] of counts) if (n > 1) result.sideEffects.twice.push(`${ws.id}: "${line}" ${n} times`);
      for (const line of ws.expect) if (!counts.has(line)) result.sideEffects.missing.push(`${ws.id}: no "${line}"`);
    }
    for (const g of goalRuns) if (g.verdict === 'goal_met' && !(await fs.stat(path.join(g.workspace, 'notes.txt')).then(() => true, () => false))) result.sideEffects.missing.push(`${g.id}: no notes.txt`);
    // Histories: workflow task failures; task agents: each tool call with exactly one result; who waited for what.
    const ids: string[] = [];
    await retrying(async () => {
      ids.length = 0;
      for await (const info of client.client.workflow.list({ query: `TaskQueue = "${taskQueue}"` })) ids.push(info.workflowId);
    }, 'list');
    result.workflowTaskFailures.histories = ids.length;
    for (const id of ids) {
      const handle = client.client.workflow.getHandle(id);
      const history = await retrying(() => handle.fetchHistory(), 'history');
      for (const e of history.events ?? []) {
        const failed = e.workflowTaskFailedEventAttributes;
        if (failed) {
          const cause = String(failed.cause ?? 'unknown');
          result.workflowTaskFailures.byCause[cause] = (result.workflowTaskFailures.byCause[cause] ?? 0) + 1;
          result.workflowTaskFailures.total++;
        }
        // Time-outs are not failures (a worker killed while it held the task, a busy machine): counted apart.
        if (e.workflowTaskTimedOutEventAttributes) result.workflowTaskFailures.timedOut++;
      }
      if (!id.includes('/task-')) continue;
      const entries = await retrying(() => handle.query(goalEventsQuery, { from: 0, limit: 500 }), 'agent events').then((p) => p.entries, () => null);
      if (!entries) continue;
      const results = new Map<string, number>();
      for (const e of entries) if (e.kind === 'tool.result') results.set(e.callId, (results.get(e.callId) ?? 0) + 1);
      for (const e of entries) if (e.kind === 'tool.call' && results.get(e.callId) !== 1) result.sideEffects.toolCallsWithoutOneResult.push(`${id} ${e.callId}: ${results.get(e.callId) ?? 0} results`);
    }
    for (const s of [...sessionRuns.map((r) => r.handle), ...canaries.map((c) => c.handle)]) {
      if (!s) continue;
      const entries = await retrying(() => s.log(0, 500), 'events').then((p) => p.entries, () => []);
      for (const e of entries) if (e.kind === 'infra.waiting' && (e as { tries?: number }).tries === 1) result.waited[(e as { service?: string }).service ?? '?'] = (result.waited[(e as { service?: string }).service ?? '?'] ?? 0) + 1;
    }
    // What the workers' replay repair did, from their logs (one line a run).
    for (const w of workers) {
      const text = await fs.readFile(path.join(w.storeDir, '..', 'worker.log'), 'utf8').catch(() => '');
      for (const line of text.split('\n')) {
        if (line.startsWith('keel worker: repaired ')) result.replayRepairs.reset.push(`host-${w.index}: ${line.slice('keel worker: '.length)}`);
        else if (line.includes('is not repaired automatically')) result.replayRepairs.left.push(`host-${w.index}: ${line.slice('keel worker: '.length)}`);
      }
    }
    checked = true;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    // Stopped by the harness: not an exit by itself.
    for (const w of workers) w.down = true;
    children.killAll();
    await keel?.close().catch(() => undefined);
    await standin?.close().catch(() => undefined);
    await (server)?.stop().catch(() => undefined);
    await (pg)?.stop().catch(() => undefined);
    // A failed run's directory (worker logs, workspaces, PostgreSQL's and Temporal's files) is kept to read.
    if (o.keep || (!signal?.aborted && !passed())) log(`fleet: the run's directory is kept: ${dir}`);
    else await fs.rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
  result.durationMs = Date.now() - began;
  result.failedChecks.push(...verdictOf(result));
  result.pass = result.failedChecks.length === 0;
  return result;
}

/** An error with its causes, in one line (the SDK's "Workflow Update failed" says why only in its cause). */
function described(error: unknown): string {
  const parts: string[] = [];
  for (let e = error as { message?: unknown; cause?: unknown } | undefined, i = 0; e && i < 4; e = e.cause as typeof e, i++) parts.push(typeof e.message === 'string' ? e.message : JSON.stringify(e));
  return parts.join(' ← ').replace(/\s+/g, ' ');
}

/** What keeps a run from passing (none: it passed). */
function verdictOf(result: FleetResult): string[] {
  const f: string[] = [];
  const g = result.goals;
  if (result.replayRepairs.left.length > 0) f.push(`${result.replayRepairs.left.length} runs the SDK could not replay were left to a human`);
  if (g.met !== g.total) f.push(`${g.met} of ${g.total} goals met (${g.stopped.length} stopped, ${g.failed.length} failed, ${g.stuck.length} stuck, ${g.needsHuman.length} need a human)`);
  const s = result.sessions;
  if (s.allAnswered !== s.total || s.stuck.length + s.failed.length + s.needsHuman.length > 0) f.push(`${s.allAnswered} of ${s.total} sessions had every turn answered (${s.failed.length} failed, ${s.stuck.length} stuck, ${s.needsHuman.length} need a human)`);
  if (result.messages.lost.length > 0) f.push(`${result.messages.lost.length} message(s) lost`);
  if (result.sideEffects.twice.length > 0) f.push(`${result.sideEffects.twice.length} side effect(s) run twice`);
  if (result.sideEffects.toolCallsWithoutOneResult.length > 0) f.push(`${result.sideEffects.toolCallsWithoutOneResult.length} tool call(s) without exactly one result`);
  if (result.faults.some((x) => x.note?.startsWith('the harness failed'))) f.push('a fault could not be applied or undone');
  return f;
}
