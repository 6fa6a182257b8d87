// The fuzz suite (issue 12): random signals, updates and start inputs against running
// sessions and goals — every name in workflows/definitions.ts and the goal's, unknown
// names, wrong encodings, wrong types, nulls, 1 MB strings, deep nesting, unicode.
// Pass: 0 WorkflowTaskFailed events in every history, every workflow still answers its
// queries, and a normal turn and a normal goal complete afterwards.
// Judged on answers, not on time (test/chaos/patience.ts): an update, query or goal that takes
// long on a busy machine is waited on; one still unanswered after `patienceMs` makes the
// verdict INCONCLUSIVE (counted in `outwaited`), never FAIL.
//
// `runFuzz` is driven by `npm run fuzz` (bench/fuzz.ts: its own dev server, 10,000
// messages, results in bench/results/fuzz.json) and, shortened, by test/integration/fuzz.test.ts.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type Client, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError, type WorkflowHandle } from '@temporalio/client';
import type { NativeConnection, WorkflowBundleWithSourceMap } from '@temporalio/worker';
import fc from 'fast-check';
import { startStandin } from '../../standin/server';
import { createKeelWorker } from '../../worker/worker';
import { GOAL_SIGNALS, SESSION_SIGNALS, goalStateQuery, stateQuery, userMessageUpdate } from '../../workflows/definitions';
import { agentWorkflow } from '../../workflows/agent';
import { goalWorkflow } from '../../workflows/goal';
import { sessionWorkflow } from '../../workflows/session';
import { DEFAULT_PATIENCE_MS, grpcCode, Outwaited, persistently, SLOW_MS, type Verdict, verdictOf, waitUntil } from './patience';

export interface FuzzOptions {
  client: Client;
  connection: NativeConnection;
  namespace: string;
  messages: number;
  seed: number;
  sessions?: number;
  goals?: number;
  /** A prebuilt workflow bundle (tests); bundled from source when absent. */
  workflowBundle?: WorkflowBundleWithSourceMap;
  log?: (line: string) => void;
  /** How long one wait (an update, a query, a first task, the normal goal) may last before it is outwaited. */
  patienceMs?: number;
  /** Stops the run (a test that timed out): the worker, the stand-in and the workflows are stopped. */
  signal?: AbortSignal;
}

export interface FuzzResult {
  seed: number;
  messages: number;
  byKind: Record<string, number>;
  /** Signals the server accepted; updates accepted / refused by the workflow. */
  signalsDelivered: number;
  updatesAccepted: number;
  updatesRejected: number;
  /** Calls the server itself refused (e.g. an empty name): never reached a workflow. */
  refusedByServer: number;
  /** Anything else: an update or a query failing with an error no valid outcome explains. Must be 0. */
  unexpected: string[];
  /** What did not answer within the patience (a busy machine): the verdict is then INCONCLUSIVE, not FAIL. */
  outwaited: string[];
  /** Answers that came, but after more than SLOW_MS: how busy the machine was. */
  slowAnswers: number;
  startInputs: { sent: number; failedAsInvalid: number; started: number };
  workflows: number;
  workflowTaskFailures: number;
  /** Workflow tasks that took longer than their timeout (a busy worker; retried by the server, not a failure). */
  workflowTaskTimeouts: number;
  /** Workflow tasks the SDK's deadlock detector failed (workflow code starved of CPU for its wall-clock limit) whose retry completed. */
  slowTaskRetries: number;
  /** WorkflowTaskFailed with cause UNHANDLED_COMMAND: a completion retried because signals arrived meanwhile. */
  completionsDeferredBySignals: number;
  /** WorkflowTaskFailed with cause FORCE_CLOSE_COMMAND from the server itself ("history-service"):
   *  signals buffered behind a task in flight passed the server's buffered-events limit (2 MB by
   *  default), so it failed that task to write them to history; a fresh task sees them all.
   *  Workflow code never runs in that decision and a bare workflow meets it the same way
   *  (test/integration/buffer-flush.test.ts). Counted apart when the workflow went on afterwards. */
  serverForcedRetries: number;
  /** WorkflowTaskFailed (FORCE_CLOSE_COMMAND) written by the server because the harness itself terminated the
   *  workflow while a task was in flight (a valid start input, once judged): the harness's doing, not Keel's. */
  closedByOwnTerminate: number;
  /** Updates the server refused while such a completion was being retried (FAILED_PRECONDITION; a client retries). */
  updatesRefusedWhileCompleting: number;
  /** The first failures' messages, by workflow (empty on a pass). */
  failures: string[];
  /** Fuzzed workflows a valid close / cancel ended, replaced by fresh ones to keep the fuzz going. */
  replaced: number;
  queriesAnswered: number;
  normalTurnCompleted: boolean;
  normalGoalCompleted: boolean;
  durationMs: number;
  /** PASS, FAIL (a wrong answer: a failed workflow task, an error, a check not met) or INCONCLUSIVE (only outwaited). */
  verdict: Verdict;
  /** The checks not met, FAIL's reasons (empty otherwise). */
  failedChecks: string[];
  pass: boolean;
}

/** temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND */
const UNHANDLED_COMMAND = 1;
/** temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_FORCE_CLOSE_COMMAND */
const FORCE_CLOSE_COMMAND = 17;
/** The reasons the harness terminates with; a task failure they caused is not counted. */
const OWN_TERMINATE = { validStart: 'fuzz: a valid start input', over: 'fuzz over' } as const;
const UNKNOWN_NAMES = ['aprove', 'Approve', 'user_message', 'stop ', '🛑', 'x'.repeat(300), '__proto__', 'constructor', 'agentreport', 'query'];
const ENCODINGS = ['json/protobuf', 'binary/protobuf', 'binary/unknown', 'json/plain', 'text/plain', '', 'bogus\u0000'];

function deep(depth: number): unknown {
  let v: unknown = 'bottom';
  for (let i = 0; i < depth; i++) v = i % 2 === 0 ? { text: v } : [v];
  return v;
}

/** A payload: random JSON, or one of the shapes that broke things before. */
function payloadArb(): fc.Arbitrary<unknown> {
  const special = fc.constantFrom<unknown>(
    null,
    undefined,
    {},
    [],
    '',
    ' ',
    0,
    -1,
    1e308,
    true,
    'hello',
    '\u202e\u0000\ud83d\udca5 ünïcödé 漢字',
    { callId: 'toolu_fake', scope: 'session' },
    { callId: 'toolu_fake', reason: 'no' },
    { text: '' },
    { text: 'hello fuzz', messageId: 'm' },
    { reason: 12 },
    { taskId: 'nope', action: 'retry' },
    { taskId: 'nope', action: 'edit' },
    { feedback: '' },
    { turns: -1 },
    { outputTokens: 'many' },
    { agentId: 'a', taskId: 't', attempt: 1, token: 'guess', usage: { inputTokens: 999999, outputTokens: 999999, costUsd: 9, unpricedCalls: 0 }, pendingApprovals: [] },
    { __keelUndecodablePayload: true, encoding: 'forged', reason: 'forged marker' },
  );
  return fc.oneof(
    { weight: 4, arbitrary: special },
    { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
    { weight: 1, arbitrary: fc.integer({ min: 50, max: 1500 }).map(deep) },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 200 }).map((t) => ({ text: t })) },
  );
}

type Message =
  | { kind: 'signal'; name: string; payload: unknown; target: number }
  | { kind: 'update'; name: string; payload: unknown; target: number }
  | { kind: 'encoding'; name: string; encoding: string; data: string; target: number }
  | { kind: 'huge'; name: string; target: number }
  | { kind: 'start'; workflow: 'session' | 'goal' | 'agent'; input: unknown };

function messageArb(targets: number): fc.Arbitrary<Message> {
  const names = fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...SESSION_SIGNALS, ...GOAL_SIGNALS, 'approvePlan', 'rejectPlan') }, { weight: 1, arbitrary: fc.constantFrom(...UNKNOWN_NAMES) });
  const target = fc.nat(targets - 1);
  return fc.oneof(
    { weight: 60, arbitrary: fc.record({ kind: fc.constant('signal' as const), name: names, payload: payloadArb(), target }) },
    { weight: 25, arbitrary: fc.record({ kind: fc.constant('update' as const), name: names, payload: payloadArb(), target }) },
    {
      weight: 10,
      arbitrary: fc.record({ kind: fc.constant('encoding' as const), name: names, encoding: fc.constantFrom(...ENCODINGS), data: fc.constantFrom('"hello"', '{"callId":"x"}', 'not json {', '\u0000\u0001', ''), target }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('huge' as const), name: fc.constantFrom('userMessage', 'steer', 'approve', 'aprove'), target }) },
    {
      weight: 4,
      arbitrary: fc.record({
        kind: fc.constant('start' as const),
        workflow: fc.constantFrom('session' as const, 'goal' as const, 'agent' as const),
        input: fc.oneof(payloadArb(), fc.record({ goal: payloadArb(), workspace: fc.constantFrom('/tmp', 'relative', 3, null), maxConcurrency: fc.integer({ min: -3, max: 3 }) }, { requiredKeys: [] })),
      }),
    },
  );
}

export async function runFuzz(options: FuzzOptions): Promise<FuzzResult> {
  const log = options.log ?? (() => {});
  const began = Date.now();
  const { client, signal } = options;
  const patience = options.patienceMs ?? DEFAULT_PATIENCE_MS;
  const handles: WorkflowHandle[] = [];
  const fuzzed: WorkflowHandle[] = [];
  /** Start inputs not judged yet: terminated with the rest if the run stops early. */
  const unjudged = new Set<WorkflowHandle>();
  const result: FuzzResult = {
    seed: options.seed,
    messages: options.messages,
    byKind: {},
    signalsDelivered: 0,
    updatesAccepted: 0,
    updatesRejected: 0,
    refusedByServer: 0,
    unexpected: [],
    outwaited: [],
    slowAnswers: 0,
    startInputs: { sent: 0, failedAsInvalid: 0, started: 0 },
    workflows: 0,
    workflowTaskFailures: 0,
    workflowTaskTimeouts: 0,
    slowTaskRetries: 0,
    completionsDeferredBySignals: 0,
    serverForcedRetries: 0,
    closedByOwnTerminate: 0,
    updatesRefusedWhileCompleting: 0,
    failures: [],
    replaced: 0,
    queriesAnswered: 0,
    normalTurnCompleted: false,
    normalGoalCompleted: false,
    durationMs: 0,
    verdict: 'INCONCLUSIVE',
    failedChecks: [],
    pass: false,
  };
  /**
   * A call to the server, waited on until it answers: a call that timed out on the way (a busy
   * server) is made again (updates keep their id, so the server joins the retry to the first),
   * and only the patience ends the wait (Outwaited), never a shorter clock.
   */
  const answer = async <T>(what: string, call: () => Promise<T>, retry: (error: unknown) => boolean = timedOutOnTheWay): Promise<T> => {
    const asked = Date.now();
    const value = await persistently(call, { ms: patience, what, ...(signal ? { signal } : {}), retry, scope: (stop, fn) => client.withAbortSignal(stop, fn) });
    if (Date.now() - asked > SLOW_MS) result.slowAnswers++;
    return value;
  };
  /** Outwaited is recorded as such; anything else is the answer, and a wrong one. */
  const outwaited = (error: unknown): boolean => {
    if (!(error instanceof Outwaited)) return false;
    result.outwaited.push(error.message);
    return true;
  };

  const workspace = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-fuzz-')));
  const standin = await startStandin({
    scenario: {
      rules: [
        { match: { toolsOffered: ['submit_plan'] }, reply: { content: [{ type: 'tool_use', name: 'submit_plan', input: { tasks: [{ id: 'note', title: 'Write a note', instructions: 'Write note.txt' }] } }] } },
        { match: { toolsOffered: ['submit_review'] }, reply: { content: [{ type: 'tool_use', name: 'submit_review', input: { verdict: 'pass', findings: 'note.txt exists' } }] } },
        { match: { systemContains: 'task [note]', hasToolResults: false }, reply: { content: [{ type: 'tool_use', name: 'write_file', input: { path: 'note.txt', content: 'note\n' } }] } },
        { match: { systemContains: 'task [note]', hasToolResults: true }, reply: { content: [{ type: 'tool_use', name: 'finish_task', input: { status: 'succeeded', summary: 'Wrote note.txt.' } }] } },
        { match: {}, reply: { content: [{ type: 'text', text: 'ok' }] } },
      ],
    },
  });
  const taskQueue = `fuzz-${options.seed}-${Date.now()}`;
  let keel: Awaited<ReturnType<typeof createKeelWorker>> | null = null;
  let running: Promise<void> | null = null;
  // An aborted run (its test timed out) stops its worker at once: nothing of it keeps polling
  // the shared server while the next test runs.
  const stopWorker = () => {
    if (keel?.worker.getState() === 'RUNNING') keel.worker.shutdown();
  };
  signal?.addEventListener('abort', stopWorker, { once: true });
  try {
    keel = await createKeelWorker({
      connection: options.connection,
      namespace: options.namespace,
      taskQueue,
      ...(options.workflowBundle ? { workflowBundle: options.workflowBundle } : {}),
      env: { ANTHROPIC_API_KEY: 'sk-ant-fuzz', ANTHROPIC_BASE_URL: standin.url },
    });
    running = keel.run();
    if (signal?.aborted) stopWorker();
    await fuzzAndCheck();
  } finally {
    signal?.removeEventListener('abort', stopWorker);
    await Promise.allSettled([...new Set([...handles, ...fuzzed, ...unjudged])].map((h) => h.terminate(OWN_TERMINATE.over)));
    stopWorker();
    await running;
    await standin.close();
    await fs.rm(workspace, { recursive: true, force: true });
  }
  result.durationMs = Date.now() - began;
  const failed = result.failedChecks;
  if (result.workflowTaskFailures > 0) failed.push(`${result.workflowTaskFailures} workflow task(s) failed`);
  if (result.unexpected.length > 0) failed.push(`${result.unexpected.length} call(s) failed unexpectedly`);
  result.verdict = verdictOf(failed.length, result.outwaited.length);
  result.pass = result.verdict === 'PASS';
  return result;

  async function fuzzAndCheck(): Promise<void> {
    const sessions = options.sessions ?? 6;
    const goals = options.goals ?? 4;
    for (let i = 0; i < sessions; i++) {
      handles.push(await client.workflow.start(sessionWorkflow, { taskQueue, workflowId: `${taskQueue}-session-${i}`, args: [{ workspace, policy: { mode: 'full-auto' } }] }));
    }
    for (let i = 0; i < goals; i++) {
      // Waiting for plan approval: the goal's signals all have something to act on.
      handles.push(await client.workflow.start(goalWorkflow, { taskQueue, workflowId: `${taskQueue}-goal-${i}`, args: [{ goal: `fuzz goal ${i}`, workspace, policy: { mode: 'full-auto' } }] }));
    }
    const targets = handles.length;
    fuzzed.push(...handles);
    /** The target, or a fresh workflow in its place when a valid close / cancel ended it. */
    const alive = async (target: number): Promise<WorkflowHandle> => {
      const current = handles[target]!;
      const { status } = await answer(`describe ${current.workflowId}`, () => current.describe());
      if (status.name === 'RUNNING') return current;
      result.replaced++;
      const isGoal = current.workflowId.includes('-goal-');
      const workflowId = `${current.workflowId.replace(/~\d+$/, '')}~${result.replaced}`;
      const fresh = isGoal
        ? await client.workflow.start(goalWorkflow, { taskQueue, workflowId, args: [{ goal: 'fuzz goal', workspace, policy: { mode: 'full-auto' } }] })
        : await client.workflow.start(sessionWorkflow, { taskQueue, workflowId, args: [{ workspace, policy: { mode: 'full-auto' } }] });
      handles[target] = fresh;
      fuzzed.push(fresh);
      return fresh;
    };
    const messages = fc.sample(messageArb(targets), { numRuns: options.messages, seed: options.seed });
    const started: WorkflowHandle[] = [];
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < messages.length && !signal?.aborted; i = next++) {
        const m = messages[i]!;
        result.byKind[m.kind] = (result.byKind[m.kind] ?? 0) + 1;
        try {
          await send(m);
        } catch (error) {
          if (signal?.aborted) throw error;
          if (outwaited(error)) continue;
          const e = error as Error & { cause?: Error };
          result.unexpected.push(`${m.kind} ${'name' in m ? m.name.slice(0, 40) : m.workflow} → ${handles[(m as { target?: number }).target ?? 0]?.workflowId}: ${e.name}: ${e.message.slice(0, 200)}${e.cause ? ` (${e.cause.name}: ${e.cause.message.slice(0, 200)})` : ''}`);
        }
        if (i % 1000 === 0) log(`  ${i}/${messages.length} messages`);
      }
    };
    const send = async (m: Message): Promise<void> => {
      if (m.kind === 'start') {
        result.startInputs.sent++;
        const id = `${taskQueue}-start-${result.startInputs.sent}`;
        const wf = m.workflow === 'session' ? sessionWorkflow : m.workflow === 'goal' ? goalWorkflow : agentWorkflow;
        // The execution timeout only ends a workflow the harness left behind: it is longer than the wait for its first task.
        const handle = await client.workflow.start(wf as typeof sessionWorkflow, { taskQueue, workflowId: id, args: [m.input as never], workflowExecutionTimeout: Math.max(patience * 2, 60_000) });
        started.push(handle);
        unjudged.add(handle);
        // Judged by the workflow's first task, however long a busy machine takes to run it:
        // failed as invalid input, or completed (the input was taken).
        const outcome = await firstTaskOutcome(client, options.namespace, handle.workflowId, { ms: patience, ...(signal ? { signal } : {}) });
        if (outcome.kind === 'invalid') result.startInputs.failedAsInvalid++;
        else if (outcome.kind === 'running' || outcome.kind === 'completed') {
          result.startInputs.started++;
          await handle.terminate(OWN_TERMINATE.validStart).catch(() => undefined);
        } else throw new Error(`start input ${JSON.stringify(m.input)?.slice(0, 100)}: ${outcome.kind}: ${'message' in outcome ? outcome.message : ''}`);
        unjudged.delete(handle);
        return;
      }
      const handle = await alive(m.target);
      if (m.kind === 'signal' || m.kind === 'huge') {
        const payload = m.kind === 'huge' ? { text: `huge ${'ü'.repeat(512 * 1024)}`, callId: 'x' } : m.payload;
        try {
          await answer(`signal ${m.name.slice(0, 40)} → ${handle.workflowId}`, () => handle.signal(m.name, ...(payload === undefined ? [] : [payload])));
          result.signalsDelivered++;
        } catch (error) {
          if (isServerRefusal(error)) result.refusedByServer++;
          else throw error;
        }
        return;
      }
      if (m.kind === 'encoding') {
        // One request id for every try: the server delivers the signal once.
        const requestId = randomUUID();
        try {
          await answer(`signal ${m.name.slice(0, 40)} (${m.encoding}) → ${handle.workflowId}`, () =>
            client.workflowService.signalWorkflowExecution({
              namespace: options.namespace,
              workflowExecution: { workflowId: handle.workflowId },
              signalName: m.name,
              input: { payloads: [{ metadata: { encoding: new TextEncoder().encode(m.encoding) }, data: new TextEncoder().encode(m.data) }] },
              identity: 'keel-fuzz',
              requestId,
            }),
          );
          result.signalsDelivered++;
        } catch (error) {
          if (isServerRefusal(error)) result.refusedByServer++;
          else throw error;
        }
        return;
      }
      // One update id for every try: a retry waits on the same update instead of sending another.
      const updateId = randomUUID();
      try {
        await answer(`update ${m.name.slice(0, 40)} → ${handle.workflowId}`, () =>
          m.payload === undefined ? handle.executeUpdate(m.name, { updateId }) : handle.executeUpdate(m.name, { args: [m.payload], updateId }),
        );
        result.updatesAccepted++;
      } catch (error) {
        if (error instanceof Outwaited) throw error;
        if (error instanceof WorkflowUpdateFailedError) result.updatesRejected++;
        else if (/FAILED_PRECONDITION/.test(String((error as { cause?: Error }).cause?.message))) result.updatesRefusedWhileCompleting++;
        else if (isServerRefusal(error) || isClosed(error)) result.refusedByServer++;
        else throw error;
      }
    };
    await Promise.all(Array.from({ length: 12 }, worker));
    log(`  sent ${messages.length}; checking histories and queries`);

    // Every workflow answers its queries.
    for (const h of handles) {
      try {
        await answer<unknown>(`query ${h.workflowId}`, () => (h.workflowId.includes('-goal-') ? h.query(goalStateQuery) : h.query(stateQuery)), notReadyYet);
        result.queriesAnswered++;
      } catch (error) {
        if (signal?.aborted) throw error;
        if (!outwaited(error)) result.unexpected.push(`query ${h.workflowId}: ${(error as Error).message} (${String((error as { cause?: Error }).cause?.message ?? '')})`);
      }
    }
    // A normal turn on a fresh session.
    const fresh = await client.workflow.start(sessionWorkflow, { taskQueue, workflowId: `${taskQueue}-after`, args: [{ workspace, policy: { mode: 'full-auto' } }] });
    handles.push(fresh);
    try {
      const updateId = randomUUID();
      await answer('the normal message after the fuzz', () => fresh.executeUpdate(userMessageUpdate, { args: ['a normal message after the fuzz'], updateId }));
      // Done when the turn is counted; a session that failed or closed instead is the answer, and a wrong one.
      const view = await waitUntil(
        async () => {
          const v = await answer('the normal turn', () => fresh.query(stateQuery), notReadyYet);
          return v.session.turns === 1 || ['failed', 'closed', 'suspended'].includes(v.status) ? v : undefined;
        },
        { ms: patience, what: 'the normal turn', ...(signal ? { signal } : {}) },
      );
      result.normalTurnCompleted = view.session.turns === 1;
      if (!result.normalTurnCompleted) result.failedChecks.push(`the normal turn: the session is ${view.status} (${view.reason ?? ''})`);
    } catch (error) {
      if (signal?.aborted) throw error;
      if (!outwaited(error)) result.failedChecks.push(`the normal turn: ${(error as Error).message.slice(0, 300)}`);
    }
    const goal = await client.workflow.start(goalWorkflow, { taskQueue, workflowId: `${taskQueue}-goal-after`, args: [{ goal: 'write a note', workspace, policy: { mode: 'full-auto' }, autoApprove: true }] });
    handles.push(goal);
    try {
      const ended = await answer('the normal goal', () => goal.result());
      result.normalGoalCompleted = ended.verdict === 'goal_met';
      if (!result.normalGoalCompleted) result.failedChecks.push(`the normal goal ended ${ended.verdict}: ${ended.summary}`);
    } catch (error) {
      if (signal?.aborted) throw error;
      if (!outwaited(error)) result.failedChecks.push(`the normal goal: ${(error as Error).message.slice(0, 300)}`);
    }

    // No workflow task failed, in any history (children of the fuzzed goals included).
    const all = [...new Set([...fuzzed, ...handles, ...started])];
    for await (const info of client.workflow.list({ query: `TaskQueue = "${taskQueue}"` })) {
      if (!all.some((h) => h.workflowId === info.workflowId)) all.push(client.workflow.getHandle(info.workflowId));
    }
    result.workflows = all.length;
    for (const h of all) {
      let events: Awaited<ReturnType<typeof historyEvents>>;
      try {
        events = await answer(`history of ${h.workflowId}`, () => historyEvents(client, options.namespace, h.workflowId));
      } catch (error) {
        if (outwaited(error)) continue;
        throw error;
      }
      for (const e of events) {
        if (e.workflowTaskTimedOutEventAttributes) result.workflowTaskTimeouts++;
        const failed = e.workflowTaskFailedEventAttributes;
        if (!failed) continue;
        // UNHANDLED_COMMAND is the server refusing a completion because new signals arrived
        // meanwhile (so none is lost); the workflow handles them in its next task. Not a
        // failure of workflow code, and counted apart. Every other cause is a failure.
        if (Number(failed.cause) === UNHANDLED_COMMAND) {
          result.completionsDeferredBySignals++;
          continue;
        }
        const wentOn = events.some((x) => Number(x.eventId) > Number(e.eventId) && x.workflowTaskCompletedEventAttributes);
        if (Number(failed.cause) === FORCE_CLOSE_COMMAND && failed.identity === 'history-service' && wentOn) {
          result.serverForcedRetries++;
          continue;
        }
        // The SDK's deadlock detector measures wall time: a starved worker thread meets it with
        // any workflow code. The task's retry completing is the workflow's answer.
        if (isStarved(failed.failure?.message) && wentOn) {
          result.slowTaskRetries++;
          continue;
        }
        // The harness's own terminate, with a task in flight: the server fails that task to close the workflow.
        const next = events.find((x) => Number(x.eventId) === Number(e.eventId) + 1)?.workflowExecutionTerminatedEventAttributes;
        if (Number(failed.cause) === FORCE_CLOSE_COMMAND && next && Object.values(OWN_TERMINATE).includes(next.reason as never)) {
          result.closedByOwnTerminate++;
          continue;
        }
        result.workflowTaskFailures++;
        // What closed the workflow says who failed the task (a server limit terminates it).
        const terminated = events.find((x) => x.workflowExecutionTerminatedEventAttributes)?.workflowExecutionTerminatedEventAttributes;
        const closedBy = terminated ? `; then terminated: ${terminated.reason ?? ''} (by ${terminated.identity ?? '?'})` : '';
        if (result.failures.length < 20) result.failures.push(`${h.workflowId}: cause ${failed.cause}: ${failed.failure?.message?.slice(0, 300)}${closedBy}`);
      }
    }
  }
}

/** A history read in small pages: histories holding 1 MB signals exceed gRPC's 4 MB message limit in one. */
export async function historyEvents(client: Client, namespace: string, workflowId: string, options: { runId?: string; pageSize?: number } = {}) {
  const events: NonNullable<Awaited<ReturnType<WorkflowHandle['fetchHistory']>>['events']> = [];
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await client.workflowService.getWorkflowExecutionHistory({
      namespace,
      execution: { workflowId, ...(options.runId ? { runId: options.runId } : {}) },
      maximumPageSize: options.pageSize ?? 50,
      ...(nextPageToken ? { nextPageToken } : {}),
    });
    events.push(...(page.history?.events ?? []));
    nextPageToken = page.nextPageToken && page.nextPageToken.length > 0 ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return events;
}

type FirstTask = { kind: 'invalid' | 'running' | 'completed' } | { kind: 'failed' | 'task_failed'; message: string };

/**
 * How a fresh workflow's first workflow task ended, read from its history: the workflow
 * failed with InvalidStartInput (the input was refused, as it should be), or the task
 * completed (the input was taken), or workflow code failed the task (a Keel bug). Waited on
 * however long a busy machine takes; only the patience ends the wait (Outwaited).
 */
async function firstTaskOutcome(client: Client, namespace: string, workflowId: string, wait: { ms: number; signal?: AbortSignal }): Promise<FirstTask> {
  return waitUntil<FirstTask>(
    async () => {
      const events = await historyEvents(client, namespace, workflowId);
      for (const e of events) {
        const failedRun = e.workflowExecutionFailedEventAttributes;
        if (failedRun) {
          const type = failedRun.failure?.applicationFailureInfo?.type ?? failedRun.failure?.cause?.applicationFailureInfo?.type;
          return type === 'InvalidStartInput' ? { kind: 'invalid' } : { kind: 'failed', message: failedRun.failure?.message ?? '' };
        }
        if (e.workflowExecutionCompletedEventAttributes) return { kind: 'completed' };
        const failedTask = e.workflowTaskFailedEventAttributes;
        // A task the deadlock detector failed on a starved thread is retried: its retry answers.
        if (failedTask && Number(failedTask.cause) !== UNHANDLED_COMMAND && !isStarved(failedTask.failure?.message)) {
          return { kind: 'task_failed', message: failedTask.failure?.message ?? `cause ${failedTask.cause}` };
        }
      }
      // The first task completed and the workflow did not fail in it: the input was taken.
      if (events.some((e) => e.workflowTaskCompletedEventAttributes)) return { kind: 'running' };
      return undefined;
    },
    { ms: wait.ms, what: `the first workflow task of ${workflowId}`, ...(wait.signal ? { signal: wait.signal } : {}), retry: timedOutOnTheWay },
  );
}

function isServerRefusal(error: unknown): boolean {
  const code = (error as { code?: number }).code;
  const msg = String((error as Error).message);
  // INVALID_ARGUMENT (an empty name, a blob over the limit), or a signal to a closed workflow.
  return code === 3 || /INVALID_ARGUMENT|exceeds|size limit|already completed|not found/i.test(msg);
}
const isClosed = (error: unknown) => /already completed|not found|WorkflowNotFound/i.test(String((error as Error).message)) || (error as Error).name === 'WorkflowNotFoundError';

/**
 * A query the server turned away because the workflow's task is being retried (WorkflowNotReady,
 * FAILED_PRECONDITION: a task that timed out on a starved worker): asked again until the task
 * completes. A task that fails for good is a failure the history check finds.
 */
const notReadyYet = (error: unknown) => timedOutOnTheWay(error) || grpcCode(error) === 9;

/** The SDK's deadlock detector (TMPRL1101): workflow code did not yield within its wall-clock limit. */
const isStarved = (message: string | null | undefined) => /Potential deadlock detected|TMPRL1101/.test(message ?? '');

/**
 * A call that timed out between here and the workflow (DEADLINE_EXCEEDED, UNAVAILABLE,
 * RESOURCE_EXHAUSTED, or the SDK's update-poll timeout): asked again. A workflow's own
 * answer, whatever its message says, is not retried.
 */
function timedOutOnTheWay(error: unknown): boolean {
  if (error instanceof WorkflowUpdateFailedError) return false;
  if (error instanceof WorkflowUpdateRPCTimeoutOrCancelledError) return true;
  // DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, UNAVAILABLE.
  return [4, 8, 14].includes(grpcCode(error) ?? -1);
}
