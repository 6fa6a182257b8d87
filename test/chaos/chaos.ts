// The chaos suite (issue 12): goals (and sessions) run while the worker is killed with
// SIGKILL at random moments and replaced, the Temporal server is killed and restarted on
// the same SQLite database, and a share of the model calls fail (429 with retry-after,
// 529, 500, cut streams, in-stream errors). The worker uses the default store (no
// KEEL_STORE_DIR: `<workspace>/.keel/store`, one workspace per goal).
// Pass: every goal completes (goal_met), 0 user messages lost, every tool call has exactly
// one result, 0 side effects repeated by a retry (each goal's `echo A >> log.txt` leaves
// exactly one line).
//
// `npm run chaos` (bench/chaos.ts) runs the full size; test/integration/chaos.test.ts a short one.
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
  durationMs: number;
  pass: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
  const random = seededRandom(options.seed);
  const between = (lo: number, hi: number) => lo + random() * (hi - lo);
  const dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-chaos-')));
  const dbFile = path.join(dir, 'temporal.db');
  const bundleFile = options.bundleFile ?? path.join(dir, 'workflows.js');
  // The bundle (as the worker builds it: worker/workflow-bundle.ts) while the server starts.
  const bundled = options.bundleFile
    ? Promise.resolve()
    : bundleWorkflowCode({ ...KEEL_BUNDLE_OPTIONS, logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} } }).then((b) => fs.writeFile(bundleFile, b.code));
  let server: DevServer;
  [server] = await Promise.all([startDevServer({ port: 0, dbFile, readyTimeoutMs: 120_000 }), bundled]);
  // A restarted server comes back on the same port: the workers reconnect to the address they have.
  const port = Number(server.address.slice(server.address.lastIndexOf(':') + 1));
  const standin = await startStandin({ scenario });
  const proxy: FaultProxy = await startFaultProxy(standin.url, options.faultRate, options.seed);
  const connection = await ClosableConnection.connect({ address: server.address });
  const client = new Client({ connection, namespace: server.namespace });
  const taskQueue = `chaos-${options.seed}-${Date.now()}`;
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
    modelRequests: proxy.counts,
    toolCalls: 0,
    toolCallsWithoutExactlyOneResult: [],
    appendsExpected: 0,
    appendsFound: 0,
    repeatedSideEffects: [],
    workflowTaskFailures: 0,
    durationMs: 0,
    pass: false,
  };

  let worker: ChildProcess | null = null;
  const startWorker = async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, TEMPORAL_ADDRESS: server.address, KEEL_TASK_QUEUE: taskQueue, KEEL_CHAOS_BUNDLE: bundleFile, ANTHROPIC_API_KEY: 'sk-ant-chaos', ANTHROPIC_BASE_URL: proxy.url };
    delete env.KEEL_STORE_DIR;
    if (options.stickyQueueTimeoutMs !== undefined) env.KEEL_CHAOS_STICKY_QUEUE_MS = String(options.stickyQueueTimeoutMs);
    const [command, ...args] = options.workerCommand ?? [process.execPath, '--import', 'tsx', path.join(root, 'test/chaos/worker.ts')];
    const child = spawn(command!, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the worker did not start: ${output.slice(-2000)}`)), 90_000);
      child.stdout.on('data', (c: Buffer) => {
        output += c.toString();
        if (output.includes('chaos worker: polling')) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.stderr.on('data', (c: Buffer) => (output += c.toString()));
      child.once('exit', (code) => reject(new Error(`the worker exited (${code}): ${output.slice(-2000)}`)));
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
    server.process.kill('SIGKILL');
    await new Promise((r) => (server.process.exitCode !== null || server.process.signalCode !== null ? r(null) : server.process.once('exit', r)));
    result.serverKills++;
    server = await startDevServer({ port, dbFile, readyTimeoutMs: 120_000 });
  };
  /** A client call through server restarts: retried while the server is away. */
  const retrying = async <T>(call: () => Promise<T>, what: string, ms = 300_000): Promise<T> => {
    const deadline = Date.now() + ms;
    for (;;) {
      try {
        return await call();
      } catch (error) {
        const message = String((error as Error).message) + String((error as { cause?: Error }).cause?.message ?? '');
        if (Date.now() > deadline || !/UNAVAILABLE|unavailable|connect|ECONNREFUSED|DEADLINE|deadline|timed out|Failed to query/i.test(message)) throw error;
        log(`  (retrying ${what}: ${message.slice(0, 120)})`);
        await sleep(1_000);
      }
    }
  };

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
        await sleep(between(500, 8_000));
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
      for (const g of inBatch) {
        try {
          const r: GoalResult = await retrying(() => g.handle.result(), 'goal result', 600_000);
          if (r.verdict === 'goal_met') result.goalsMet++;
          else {
            result.goalFailures.push(`${g.handle.workflowId}: ${r.verdict}: ${r.summary}`);
            // What the planner's and critic's calls met, round by round: a stop that happens
            // on some runs only can be read from the output of the one that failed.
            for (const line of await retrying(() => modelCallTrail(g.handle), 'history')) log(`  ${g.handle.workflowId} ${line}`);
          }
        } catch (error) {
          result.goalFailures.push(`${g.handle.workflowId}: ${(error as Error).message}`);
        }
      }
      log(`  batch ${b + 1} done: ${result.goalsMet} goals met so far`);
    }

    // Checks, with a worker running (queries of finished workflows need one).
    for (const s of sessions) {
      result.sessions++;
      await retrying(async () => {
        const deadline = Date.now() + 120_000;
        while ((await s.handle.query(stateQuery)).session.turns < s.texts.length && Date.now() < deadline) await sleep(500);
      }, 'session turns');
      const page = await retrying(() => s.handle.query(transcriptQuery, { from: 0, limit: 500 }), 'transcript');
      const said = page.messages.filter((m) => m.role === 'user').map((m) => JSON.stringify(m.content));
      for (const text of s.texts) if (!said.some((c) => c.includes(text))) result.messagesLost++;
    }
    for (const g of goals) {
      result.appendsExpected++;
      const text = await fs.readFile(path.join(g.workspace, 'log.txt'), 'utf8').catch(() => '');
      const lines = text.split('\n').filter((l) => l === 'A').length;
      result.appendsFound += Math.min(lines, 1);
      if (lines !== 1) result.repeatedSideEffects.push(`${g.handle.workflowId}: log.txt has ${lines} lines`);
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
    await connection.close().catch(() => undefined);
    await proxy.close();
    await standin.close();
    await server.stop();
    await fs.rm(dir, { recursive: true, force: true });
  }
  result.durationMs = Date.now() - began;
  result.pass =
    result.goalsMet === options.goals &&
    result.messagesLost === 0 &&
    result.toolCallsWithoutExactlyOneResult.length === 0 &&
    result.repeatedSideEffects.length === 0 &&
    result.appendsFound === options.goals;
  return result;
}
