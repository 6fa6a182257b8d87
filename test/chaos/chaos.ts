// The chaos suite (issue 12): goals (and sessions) run while the worker is killed with
// SIGKILL at random moments and replaced, the Temporal server is killed and restarted on
// the same SQLite database, and a share of the model calls fail (429 with retry-after,
// 529, 500, cut streams, in-stream errors). The worker uses the default store (no
// KEEL_STORE_DIR: `<workspace>/.keel/store`, one workspace per goal).
// Pass: every goal completes (goal_met), 0 user messages lost, every tool call has exactly
// one result, 0 side effects repeated by a retry (each goal's `echo A >> log.txt` leaves
// exactly one line).
// Judged on answers, not on time (test/chaos/patience.ts): a goal, a message or a restart that
// takes long on a busy machine is waited on; one still unanswered after `patienceMs` makes the
// verdict INCONCLUSIVE (`outwaited`), never FAIL. Every process it starts is killed when it
// ends, however it ends; the worker processes also exit when the harness dies (worker.ts).
//
// `npm run chaos` (bench/chaos.ts) runs the full size; test/e2e/chaos.test.ts a short one (`npm run test:e2e -- chaos`).
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, type WorkflowHandle } from '@temporalio/client';
import { bundleWorkflowCode } from '@temporalio/worker';
import { ClosableConnection } from '../../client/grpc-retry';
import { startStandin } from '../../standin/server';
import { startDevServer, type DevServer } from '../../worker/dev-server';
import { KEEL_BUNDLE_OPTIONS } from '../../worker/worker';
import { RETRY_TABLE } from '../../machines/model-retry';
import { goalEventsQuery, stateQuery, transcriptQuery } from '../../workflows/definitions';
import { goalWorkflow, type GoalResult } from '../../workflows/goal';
import { sessionWorkflow } from '../../workflows/session';
import { seededRandom, startFaultProxy, type FaultProxy } from './model-faults';
import { Children, DEFAULT_PATIENCE_MS, Outwaited, patiently, persistently, SLOW_MS, sleep, type Verdict, verdictOf, waitUntil } from './patience';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface ChaosOptions {
  goals: number;
  /** Goals run at once; each batch sees its own worker kills. */
  batch: number;
  /** Worker kills per batch (each at a random moment, 0.5–8 s apart). */
  workerKillsPerBatch: number;
  serverKills: number;
  faultRate: number;
  seed: number;
  log?: (line: string) => void;
  /**
   * Shorter waits between the goals' model retries (GoalOptions.retryBackoffMs; the session's
   * turns keep the table's 1/2/3 s): the
   * retry table's waits can only be shortened this way, and the number of retries stays the
   * table's when there is one entry per retry (patientWaits). Absent: the table's own waits.
   */
  retryBackoffMs?: number[];
  /** A workflow bundle already built (the test run's global one); absent: bundled here. */
  bundleFile?: string;
  /** The worker process: `[node, test/chaos/worker.ts compiled]` (the test run's); absent: worker.ts under tsx. */
  workerCommand?: readonly string[];
  /**
   * How long the worker's sticky queue holds a workflow task (its `stickyQueueTimeoutMs`):
   * each kill costs the goals this long before another worker takes their tasks. Absent:
   * Temporal's 10 s, as a real fleet would run.
   */
  stickyQueueTimeoutMs?: number;
  /** How long one wait (a goal's result, a worker or server start, a message to show) may last before it is outwaited. */
  patienceMs?: number;
  /** Stops the run (a test that timed out): the workers and the server are killed at once. */
  signal?: AbortSignal;
}

/** The patient rows' waits (planner, critic, task agents: 11 retries) divided by `divisor`, one per retry. */
export function patientWaits(divisor: number): number[] {
  const row = RETRY_TABLE.answer.transient;
  return Array.from({ length: row.retries }, (_, i) => Math.round((row.backoffMs[i] ?? row.backoffMs.at(-1) ?? 0) / divisor));
}

export interface ChaosResult {
  seed: number;
  goals: number;
  goalsMet: number;
  goalFailures: string[];
  sessions: number;
  messagesSent: number;
  messagesLost: number;
  workerKills: number;
  serverKills: number;
  modelRequests: Record<string, number>;
  toolCalls: number;
  toolCallsWithoutExactlyOneResult: string[];
  appendsExpected: number;
  appendsFound: number;
  repeatedSideEffects: string[];
  workflowTaskFailures: number;
  /** What did not answer within the patience (a busy machine): the verdict is then INCONCLUSIVE, not FAIL. */
  outwaited: string[];
  /** Goals whose result took longer than SLOW_MS after their batch's chaos ended: how busy the machine was. */
  slowGoals: number;
  durationMs: number;
  /** PASS, FAIL (a goal not met, a message lost, a tool call without one result, a side effect repeated) or INCONCLUSIVE (only outwaited). */
  verdict: Verdict;
  /** FAIL's reasons (empty otherwise). */
  failedChecks: string[];
  pass: boolean;
}

const APPEND = 'echo A >> log.txt';
/** What a model told of an earlier attempt does: check before appending again. */
const GUARDED = 'grep -qx A log.txt || echo A >> log.txt';
const run = (command: string) => ({ content: [{ type: 'tool_use' as const, name: 'run_command', input: { command } }] });

const scenario = {
  rules: [
    { match: { toolsOffered: ['submit_plan'] }, reply: { content: [{ type: 'tool_use' as const, name: 'submit_plan', input: { tasks: [{ id: 'append', title: 'Append the line', instructions: `Append one line A to log.txt: ${APPEND}` }] } }] } },
    { match: { toolsOffered: ['submit_review'] }, reply: { content: [{ type: 'tool_use' as const, name: 'submit_review', input: { verdict: 'pass', findings: 'log.txt has its line' } }] } },
    { match: { systemContains: 'task [append]', hasToolResults: true, lastUserContains: 'exit code 0' }, reply: { content: [{ type: 'tool_use' as const, name: 'finish_task', input: { status: 'succeeded', summary: 'Appended.' } }] } },
    // The command failed, timed out or was cut off by a crash: it may or may not have run.
    { match: { systemContains: 'task [append]', hasToolResults: true }, reply: run(GUARDED) },
    { match: { systemContains: 'task [append]', lastUserContains: 'attempted before' }, reply: run(GUARDED) },
    { match: { systemContains: 'task [append]' }, reply: run(APPEND) },
    { match: {}, reply: { content: [{ type: 'text' as const, text: 'Noted.' }] } },
  ],
};

/** Each model activity of a workflow, with its attempts' outcomes and the timers between them. */
async function modelCallTrail(handle: WorkflowHandle): Promise<string[]> {
  const history = await handle.fetchHistory();
  const names = new Map<string, string>();
  const lines: string[] = [];
  for (const e of history.events ?? []) {
    const id = String(e.eventId);
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled) {
      names.set(id, `${scheduled.activityType?.name ?? '?'} ${scheduled.activityId ?? '?'}`);
      lines.push(`#${id} scheduled ${names.get(id)}`);
    }
    const failed = e.activityTaskFailedEventAttributes;
    if (failed) lines.push(`#${id} failed ${names.get(String(failed.scheduledEventId)) ?? '?'}: ${failed.failure?.message ?? ''} / ${failed.failure?.cause?.message ?? ''} (retry state ${String(failed.retryState)})`);
    const timedOut = e.activityTaskTimedOutEventAttributes;
    if (timedOut) lines.push(`#${id} timed out ${names.get(String(timedOut.scheduledEventId)) ?? '?'}: ${timedOut.failure?.message ?? ''}`);
    const completed = e.activityTaskCompletedEventAttributes;
    if (completed) lines.push(`#${id} completed ${names.get(String(completed.scheduledEventId)) ?? '?'}`);
    if (e.timerStartedEventAttributes) lines.push(`#${id} timer ${String(e.timerStartedEventAttributes.startToFireTimeout?.seconds ?? '?')} s`);
    if (e.workflowTaskFailedEventAttributes) lines.push(`#${id} workflow task failed: ${e.workflowTaskFailedEventAttributes.failure?.message ?? ''}`);
  }
  return lines;
}

export async function runChaos(options: ChaosOptions): Promise<ChaosResult> {
  const log = options.log ?? (() => {});
  const began = Date.now();
  const { signal } = options;
  const patience = options.patienceMs ?? DEFAULT_PATIENCE_MS;
  const wait = { ms: patience, ...(signal ? { signal } : {}) };
  const random = seededRandom(options.seed);
  const between = (lo: number, hi: number) => lo + random() * (hi - lo);
  const children = new Children();
  // An aborted run (its test timed out) kills its workers at once; the unwinding does the rest.
  const onAbort = () => children.killAll();
  signal?.addEventListener('abort', onAbort, { once: true });
  const dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-chaos-')));
  const dbFile = path.join(dir, 'temporal.db');
  const bundleFile = options.bundleFile ?? path.join(dir, 'workflows.js');
  const result: ChaosResult = {
    seed: options.seed,
    goals: options.goals,
    goalsMet: 0,
    goalFailures: [],
    sessions: 0,
    messagesSent: 0,
    messagesLost: 0,
    workerKills: 0,
    serverKills: 0,
    modelRequests: { '429': 0, '529': 0, '500': 0, cut: 0, stream_error: 0, passed: 0 },
    toolCalls: 0,
    toolCallsWithoutExactlyOneResult: [],
    appendsExpected: 0,
    appendsFound: 0,
    repeatedSideEffects: [],
    workflowTaskFailures: 0,
    outwaited: [],
    slowGoals: 0,
    durationMs: 0,
    verdict: 'INCONCLUSIVE',
    failedChecks: [],
    pass: false,
  };
  let server: DevServer | null = null;
  let standin: Awaited<ReturnType<typeof startStandin>> | null = null;
  let proxy: FaultProxy | null = null;
  let connection: ClosableConnection | null = null;
  let worker: ChildProcess | null = null;
  /** Whether each goal met its goal (absent: not known, its wait was outwaited). */
  const met = new Map<string, boolean>();
  try {
    // The bundle (as the worker builds it: worker/workflow-bundle.ts) while the server starts.
    const bundled = options.bundleFile
      ? Promise.resolve()
      : bundleWorkflowCode({ ...KEEL_BUNDLE_OPTIONS, logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} } }).then((b) => fs.writeFile(bundleFile, b.code));
    // Held as soon as it is up: a bundle that fails meanwhile must not leave it running.
    const starting = serverWithin(patience, { port: 0, dbFile });
    starting.then((s) => (server = s)).catch(() => undefined);
    const [started] = await Promise.all([starting, bundled]);
    server = started;
    // A restarted server comes back on the same port: the workers reconnect to the address they have.
    const port = Number(server.address.slice(server.address.lastIndexOf(':') + 1));
    standin = await startStandin({ scenario });
    proxy = await startFaultProxy(standin.url, options.faultRate, options.seed);
    result.modelRequests = proxy.counts;
    connection = await ClosableConnection.connect({ address: server.address });
    const client = new Client({ connection, namespace: server.namespace });
    const taskQueue = `chaos-${options.seed}-${Date.now()}`;
    const workerUrl = proxy.url;
    const address = server.address;

    const startWorker = async () => {
      const env: NodeJS.ProcessEnv = { ...process.env, TEMPORAL_ADDRESS: address, KEEL_TASK_QUEUE: taskQueue, KEEL_CHAOS_BUNDLE: bundleFile, ANTHROPIC_API_KEY: 'sk-ant-chaos', ANTHROPIC_BASE_URL: workerUrl };
      delete env.KEEL_STORE_DIR;
      if (options.stickyQueueTimeoutMs !== undefined) env.KEEL_CHAOS_STICKY_QUEUE_MS = String(options.stickyQueueTimeoutMs);
      const [command, ...args] = options.workerCommand ?? [process.execPath, '--import', 'tsx', path.join(root, 'test/chaos/worker.ts')];
      const child = spawn(command!, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
      children.add(child);
      let output = '';
      // Polling when it says so, however long a busy machine takes to get there; its exit first is a failure to start.
      await patiently(
        () =>
          new Promise<void>((resolve, reject) => {
            child.stdout.on('data', (c: Buffer) => {
              output += c.toString();
              if (output.includes('chaos worker: polling')) resolve();
            });
            child.stderr.on('data', (c: Buffer) => (output += c.toString()));
            child.once('exit', (code) => reject(new Error(`the worker exited (${code}): ${output.slice(-2000)}`)));
          }),
        { ...wait, what: 'a worker process to start polling' },
      ).catch((error: unknown) => {
        child.kill('SIGKILL');
        throw error;
      });
      child.stdout.resume();
      child.stderr.resume();
      worker = child;
    };
    const killWorker = async () => {
      const w = worker;
      if (!w || w.exitCode !== null) return;
      const exited = new Promise((r) => w.once('exit', r));
      w.kill('SIGKILL');
      await exited;
      result.workerKills++;
    };
    const killServer = async () => {
      const s = server!;
      s.process.kill('SIGKILL');
      await new Promise((r) => (s.process.exitCode !== null || s.process.signalCode !== null ? r(null) : s.process.once('exit', r)));
      result.serverKills++;
      server = await serverWithin(patience, { port, dbFile });
    };
    /** A client call through server restarts and a busy server: made again while the server is away, until the patience ends. */
    const retrying = <T>(call: () => Promise<T>, what: string): Promise<T> =>
      persistently(call, {
        ...wait,
        what,
        retry: isTransient,
        scope: (stop, fn) => client.withAbortSignal(stop, fn),
        onRetry: (error) => log(`  (retrying ${what}: ${String((error as Error).message).slice(0, 120)})`),
      });

    const retryWaits = options.retryBackoffMs ? { retryBackoffMs: options.retryBackoffMs } : {};
    const goals: { handle: WorkflowHandle<typeof goalWorkflow>; workspace: string }[] = [];
    const sessions: { handle: WorkflowHandle<typeof sessionWorkflow>; texts: string[] }[] = [];
    try {
      await startWorker();
      const batches = Math.ceil(options.goals / options.batch);
      const serverKillAt = new Set(Array.from({ length: options.serverKills }, (_, i) => Math.floor(((i + 0.5) * batches) / Math.max(1, options.serverKills))));
      for (let b = 0; b < batches; b++) {
        const inBatch: typeof goals = [];
        for (let i = 0; i < options.batch && goals.length < options.goals; i++) {
          const workspace = await fs.realpath(await fs.mkdtemp(path.join(dir, 'ws-')));
          const handle = await retrying(
            () => client.workflow.start(goalWorkflow, { taskQueue, workflowId: `${taskQueue}-goal-${goals.length}`, args: [{ goal: 'append one line A to log.txt', workspace, policy: { mode: 'full-auto' }, autoApprove: true, headless: true, ...retryWaits }] }),
            'start goal',
          );
          goals.push({ handle, workspace });
          inBatch.push({ handle, workspace });
        }
        // One session per batch: three messages, sent while the chaos goes on.
        const sessionWorkspace = await fs.realpath(await fs.mkdtemp(path.join(dir, 'session-')));
        const session = { handle: await retrying(() => client.workflow.start(sessionWorkflow, { taskQueue, workflowId: `${taskQueue}-session-${b}`, args: [{ workspace: sessionWorkspace, policy: { mode: 'full-auto' } }] }), 'start session'), texts: [] as string[] };
        sessions.push(session);
        const say = async (n: number) => {
          const text = `message ${n} of batch ${b}`;
          await retrying(() => session.handle.signal('userMessage', { text, messageId: `b${b}-m${n}` }), 'signal');
          session.texts.push(text);
          result.messagesSent++;
        };
        await say(1);
        log(`batch ${b + 1}/${batches}: ${inBatch.length} goals`);
        for (let k = 0; k < options.workerKillsPerBatch; k++) {
          await sleep(between(500, 8_000), signal);
          await killWorker();
          if (k === 0 && serverKillAt.has(b)) {
            log('  kill -9 the Temporal server; restart it on the same database');
            await killServer();
          }
          await say(k + 2);
          await startWorker();
          log(`  worker killed and replaced (${result.workerKills} so far)`);
        }
        while (session.texts.length < 3) await say(session.texts.length + 1);
        const chaosOver = Date.now();
        for (const g of inBatch) {
          try {
            const r: GoalResult = await retrying(() => g.handle.result(), `the result of ${g.handle.workflowId}`);
            if (Date.now() - chaosOver > SLOW_MS) result.slowGoals++;
            met.set(g.handle.workflowId, r.verdict === 'goal_met');
            if (r.verdict === 'goal_met') result.goalsMet++;
            else {
              result.goalFailures.push(`${g.handle.workflowId}: ${r.verdict}: ${r.summary}`);
              // What the planner's and critic's calls met, round by round: a stop that happens
              // on some runs only can be read from the output of the one that failed.
              for (const line of await retrying(() => modelCallTrail(g.handle), 'history')) log(`  ${g.handle.workflowId} ${line}`);
            }
          } catch (error) {
            if (error instanceof Outwaited) result.outwaited.push(error.message);
            else if (signal?.aborted) throw error;
            else result.goalFailures.push(`${g.handle.workflowId}: ${(error as Error).message}`);
          }
        }
        log(`  batch ${b + 1} done: ${result.goalsMet} goals met so far`);
      }

      // Checks, with a worker running (queries of finished workflows need one).
      for (const s of sessions) {
        result.sessions++;
        const missing = async () => {
          const page = await retrying(() => s.handle.query(transcriptQuery, { from: 0, limit: 500 }), 'transcript');
          const said = page.messages.filter((m) => m.role === 'user').map((m) => JSON.stringify(m.content));
          return s.texts.filter((text) => !said.some((c) => c.includes(text)));
        };
        try {
          // Every message shows in the transcript, however long a busy worker takes to get to it.
          await waitUntil(async () => ((await missing()).length === 0 ? true : undefined), { ...wait, what: `the messages of ${s.handle.workflowId}`, everyMs: 1_000 });
        } catch (error) {
          if (!(error instanceof Outwaited)) throw error;
          // Lost only if the session has nothing left to do with them; else it is still at work.
          const view = await retrying(() => s.handle.query(stateQuery), 'state');
          if (view.turn === null && view.queueLength === 0) result.messagesLost += (await missing()).length;
          else result.outwaited.push(error.message);
        }
      }
      for (const g of goals) {
        result.appendsExpected++;
        const text = await fs.readFile(path.join(g.workspace, 'log.txt'), 'utf8').catch(() => '');
        const lines = text.split('\n').filter((l) => l === 'A').length;
        result.appendsFound += Math.min(lines, 1);
        // More than one line is a repeated side effect whenever it is found; none, only of a goal that says it was met.
        if (lines > 1 || (lines === 0 && met.get(g.handle.workflowId) === true)) result.repeatedSideEffects.push(`${g.handle.workflowId}: log.txt has ${lines} lines`);
      }
      const ids: string[] = [];
      for await (const info of client.workflow.list({ query: `TaskQueue = "${taskQueue}"` })) ids.push(info.workflowId);
      for (const id of ids) {
        const handle = client.workflow.getHandle(id);
        const history = await retrying(() => handle.fetchHistory(), 'history');
        result.workflowTaskFailures += (history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes && Number(e.workflowTaskFailedEventAttributes.cause) !== 1).length;
        if (!id.includes('/task-')) continue;
        const entries = (await retrying(() => handle.query(goalEventsQuery, { from: 0, limit: 500 }), 'agent events')).entries;
        const results = new Map<string, number>();
        for (const e of entries) if (e.kind === 'tool.result') results.set(e.callId, (results.get(e.callId) ?? 0) + 1);
        for (const e of entries) {
          if (e.kind !== 'tool.call') continue;
          result.toolCalls++;
          if (results.get(e.callId) !== 1) result.toolCallsWithoutExactlyOneResult.push(`${id} ${e.callId}: ${results.get(e.callId) ?? 0} results`);
        }
      }
    } finally {
      await killWorker().catch(() => undefined);
      result.workerKills = Math.max(0, result.workerKills - 1); // the last one only stops the run
    }
  } catch (error) {
    // A wait outlasted anywhere (a server that did not come back, a worker that did not start): the machine, not Keel.
    if (!(error instanceof Outwaited)) throw error;
    result.outwaited.push(error.message);
  } finally {
    signal?.removeEventListener('abort', onAbort);
    children.killAll();
    await connection?.close().catch(() => undefined);
    await proxy?.close();
    await standin?.close();
    await server?.stop();
    await fs.rm(dir, { recursive: true, force: true });
  }
  result.durationMs = Date.now() - began;
  const failed = result.failedChecks;
  if (result.goalFailures.length > 0) failed.push(`${result.goalFailures.length} goal(s) not met`);
  if (result.messagesLost > 0) failed.push(`${result.messagesLost} message(s) lost`);
  if (result.toolCallsWithoutExactlyOneResult.length > 0) failed.push(`${result.toolCallsWithoutExactlyOneResult.length} tool call(s) without exactly one result`);
  if (result.repeatedSideEffects.length > 0) failed.push(`${result.repeatedSideEffects.length} side effect(s) repeated or missing`);
  // With nothing outwaited, every goal was judged: all of them must be met.
  if (result.outwaited.length === 0 && failed.length === 0 && (result.goalsMet !== options.goals || result.appendsFound !== options.goals)) {
    failed.push(`${result.goalsMet} of ${options.goals} goals met, ${result.appendsFound} appends found`);
  }
  result.verdict = verdictOf(failed.length, result.outwaited.length);
  result.pass = result.verdict === 'PASS';
  return result;
}

/** A dev server (started or restarted), however long a busy machine takes to bring it up; not up within the patience: Outwaited. */
export async function serverWithin(patience: number, options: { port: number; dbFile: string }): Promise<DevServer> {
  try {
    return await startDevServer({ ...options, readyTimeoutMs: patience });
  } catch (error) {
    if (/did not answer on .* within/.test(String((error as Error).message))) throw new Outwaited('the Temporal server to answer', patience);
    throw error;
  }
}

/** A call that failed on the way to the server (restarting, busy): made again. */
export function isTransient(error: unknown): boolean {
  const message = String((error as Error).message) + String((error as { cause?: Error }).cause?.message ?? '');
  return /UNAVAILABLE|unavailable|connect|ECONNREFUSED|DEADLINE|deadline|timed out|Failed to query/i.test(message);
}
