// Tracing must never change what a workflow does. A fleet turns tracing on (or off) one
// worker at a time, so any worker replays any history: this records a goal (plan approval
// and tool approval by update, whose validators run; child agents; continue-as-new) and a
// session (signal-with-start, approval by update, queries, continue-as-new) on a real
// worker with tracing on and on one with tracing off, then replays every history on a
// worker of each kind — the 2 × 2 matrix — and on a bundle without Keel's interceptors. Each worker is configured as production
// configures it: the telemetry from OTEL_* variables (worker/telemetry.ts) and the
// workflow code that configuration runs.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, type WorkflowHandle } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import { bundleWorkflowCode, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandin, type Standin } from '../../standin/server';
import { startTelemetry, type Telemetry } from '../../worker/telemetry';
import { payloadConverterPath } from '../../worker/worker';
import { PRELOADED_WORKFLOW_MODULES, WORKFLOW_INTERCEPTOR_MODULES } from '../../worker/workflow-bundle';
import { createKeelWorker } from '../../worker/worker';
import {
  approvePlanUpdate,
  approveUpdate,
  closeSignal,
  goalApproveUpdate,
  goalStateQuery,
  pendingApprovalsQuery,
  stateQuery,
  userMessageSignal,
  userMessageUpdate,
} from '../../workflows/definitions';
import { goalWorkflow } from '../../workflows/goal';
import { stampedMemo, startSearchAttributes } from '../../workflows/run-format';
import { sessionWorkflow } from '../../workflows/session';
import { agent, critic, FAST_MODEL, finish, plan, planner, review, task } from '../fixtures/goal-harness';
import { KEY, makeWorkspace, say, use, waitUntil } from '../fixtures/session-harness';
import { bundle as bundledWorkflows, silentLogger, uniqueTaskQueue } from '../helpers/temporal';
import { useTemporal } from '../fixtures/use-temporal';

const here = path.dirname(fileURLToPath(import.meta.url));
const workflowsPath = path.join(here, '../../workflows/index.ts');

type Mode = 'on' | 'off';
interface Config {
  telemetry: Telemetry;
  bundle: WorkflowBundleWithSourceMap;
}
type History = temporal.api.history.v1.IHistory;

const { env } = useTemporal({ workflows: false });
let standin: Standin;
let receiver: Server;
let spansReceived = 0;
const configs = {} as Record<Mode, Config>;
const recorded = {} as Record<Mode, { workflowId: string; history: History }[]>;
let bare: WorkflowBundleWithSourceMap;

/**
 * The workflow code a worker of this configuration runs: what Worker.create bundles from
 * `workflowsPath` and its interceptor modules. Without tracing's modules that is the run's one
 * bundle of Keel's workflows (the same options), not built again.
 */
function workflowCodeFor(telemetry: Telemetry): Promise<WorkflowBundleWithSourceMap> {
  const tracing = telemetry.workerOptions.interceptors?.workflowModules ?? [];
  if (tracing.length === 0) return bundledWorkflows(workflowsPath);
  return bundleWorkflowCode({ workflowsPath, payloadConverterPath, workflowInterceptorModules: [...WORKFLOW_INTERCEPTOR_MODULES, ...tracing], preloadModules: [...PRELOADED_WORKFLOW_MODULES], logger: silentLogger });
}

beforeAll(async () => {
  receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/v1/traces') spansReceived++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  const on = await startTelemetry({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SERVICE_NAME: 'keel-replay-test' });
  const off = await startTelemetry({});
  expect(on.tracing).toBe(true);
  expect(off.tracing).toBe(false);
  const [bundleOn, bundleOff] = await Promise.all([workflowCodeFor(on), workflowCodeFor(off)]);
  configs.on = { telemetry: on, bundle: bundleOn };
  configs.off = { telemetry: off, bundle: bundleOff };
  // The workflows alone, without Keel's interceptors (a bundle someone builds by hand).
  bare = await bundleWorkflowCode({ workflowsPath, payloadConverterPath, logger: silentLogger });
  standin = await startStandin({
    scenario: {
      rules: [
        { match: planner(), reply: plan([task('one', 'Write one', 'Write ONE.md.'), task('two', 'Write two', 'Write TWO.md.', { dependencies: ['one'] })]) },
        { match: agent('one', { hasToolResults: false }), reply: use('write_file', { path: 'ONE.md', content: 'one\n' }) },
        { match: agent('two', { hasToolResults: false }), reply: use('write_file', { path: 'TWO.md', content: 'two\n' }) },
        { match: { systemContains: 'task [', hasToolResults: true }, reply: finish('Written.') },
        { match: critic(), reply: review('pass', 'Both files are there.') },
        { match: { lastUserContains: 'write the note', hasToolResults: false }, reply: use('write_file', { path: 'note.txt', content: 'v1' }) },
        // A quick read: a local activity, whose scheduling the tracing interceptor sees too.
        { match: { lastUserContains: 'read the note', hasToolResults: false }, reply: use('read_file', { path: 'note.txt' }) },
        { match: { hasToolResults: true }, reply: say('Noted.') },
        { match: { lastUserContains: 'message' }, reply: say('Fine.') },
      ],
    },
  });
}, 240_000);

afterAll(async () => {
  await configs.on?.telemetry.shutdown();
  await configs.off?.telemetry.shutdown();
  await standin?.close();
  receiver?.close();
});

/** Every run of a workflow id, oldest first. */
async function chain(client: Client, workflowId: string): Promise<{ workflowId: string; history: History }[]> {
  const found: { workflowId: string; history: History }[] = [];
  let runId: string | undefined = (await client.workflow.getHandle(workflowId).describe()).runId;
  while (runId) {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    found.unshift({ workflowId, history });
    runId = history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId ?? undefined;
  }
  return found;
}

/** A goal and a session, driven the way people drive them, on a worker of this configuration. */
async function record(mode: Mode): Promise<{ workflowId: string; history: History }[]> {
  const { telemetry, bundle } = configs[mode];
  const taskQueue = uniqueTaskQueue(`replay-${mode}`);
  const workspace = await makeWorkspace(`keel-replay-${mode}-`);
  const keel = await createKeelWorker({
    connection: env.nativeConnection,
    namespace: env.namespace,
    taskQueue,
    workflowBundle: bundle,
    workflowsOnCallingThread: true,
    env: { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: standin.url },
    telemetry,
    log: () => {},
  });
  // The SDK's client as KeelClient builds it: the caller's trace context rides in headers.
  const client = new Client({ connection: env.client.connection, namespace: env.namespace, interceptors: { workflow: [new OpenTelemetryWorkflowClientInterceptor()] } });
  const running = keel.run();
  const handles: WorkflowHandle[] = [];
  try {
    // ---- a goal: plan approval and a child's tool approval by update; continue-as-new between the tasks
    const goalId = `${taskQueue}-goal`;
    const goal = await client.workflow.start(goalWorkflow, {
      taskQueue,
      workflowId: goalId,
      args: [{ goal: 'Two files', workspace, policy: { mode: 'ask' }, autoApprove: false, modelActivity: FAST_MODEL, continueAsNewAfterEvents: 30 }],
      // Stamped as KeelClient starts it (workflows/run-format.ts): its setup is a local activity and
      // it asks for no patch; the session below is not (as the Temporal CLI starts one). Every run
      // after a continue-as-new, and every agent, is stamped.
      memo: stampedMemo(),
      typedSearchAttributes: startSearchAttributes('goal', workspace),
    });
    handles.push(goal);
    await waitUntil(() => goal.query(goalStateQuery), (s) => s.status === 'awaiting_plan_approval', 30_000, 'plan approval');
    await goal.executeUpdate(approvePlanUpdate, { args: [{}] });
    for (const file of ['one', 'two']) {
      const waiting = await waitUntil(() => goal.query(goalStateQuery), (s) => s.pendingApprovals.length === 1 && s.pendingApprovals[0]!.taskId === file, 30_000, `approval of ${file}`);
      // A validator refuses an unknown call (nothing is written to history), then the real one is approved.
      await expect(goal.executeUpdate(goalApproveUpdate, { args: [{ callId: 'toolu_unknown' }] })).rejects.toThrow();
      await goal.executeUpdate(goalApproveUpdate, { args: [{ callId: waiting.pendingApprovals[0]!.callId }] });
    }
    const report = await goal.result();
    expect(report.verdict).toBe('goal_met');
    expect(report.runs).toBeGreaterThan(1);

    // ---- a session: started by signal-with-start, approval by update, continue-as-new after 2 turns
    const sessionId = `${taskQueue}-session`;
    const session = await client.workflow.signalWithStart(sessionWorkflow, {
      taskQueue,
      workflowId: sessionId,
      args: [{ workspace, policy: { mode: 'ask' }, continueAsNewAfterTurns: 2, idleTimeoutMs: 600_000 }],
      signal: userMessageSignal,
      signalArgs: [{ text: 'write the note' }],
    });
    handles.push(session);
    await waitUntil(() => session.query(pendingApprovalsQuery), (p) => p.length === 1, 30_000, 'session approval');
    const [call] = await session.query(pendingApprovalsQuery);
    await expect(session.executeUpdate(approveUpdate, { args: [{ callId: 'toolu_unknown' }] })).rejects.toThrow();
    await session.executeUpdate(approveUpdate, { args: [{ callId: call!.callId }] });
    await waitUntil(() => session.query(stateQuery), (s) => s.status === 'active' && s.session.turns === 1, 30_000, 'turn 1');
    await session.executeUpdate(userMessageUpdate, { args: [{ text: 'message 2: read the note' }] });
    await waitUntil(() => session.query(stateQuery), (s) => s.run === 2, 30_000, 'second run');
    await session.executeUpdate(userMessageUpdate, { args: [{ text: 'message 3' }] });
    await waitUntil(() => session.query(stateQuery), (s) => s.status === 'active' && s.session.turns === 3, 30_000, 'turn 3');
    await session.signal(closeSignal, {});
    await session.result();

    return [...(await chain(client, goalId)), ...(await chain(client, `${goalId}/task-one/1`)), ...(await chain(client, `${goalId}/task-two/1`)), ...(await chain(client, sessionId))];
  } finally {
    await Promise.allSettled(handles.map((h) => h.terminate('test over')));
    keel.worker.shutdown();
    await running;
  }
}

describe('replay across tracing on and off', () => {
  for (const mode of ['on', 'off'] as const) {
    it(`records a goal (two runs, two agents) and a session (two runs) with tracing ${mode}`, async () => {
      const histories = await record(mode);
      expect(histories.filter((h) => h.workflowId.endsWith('-goal')).length).toBeGreaterThan(1);
      expect(histories.filter((h) => h.workflowId.endsWith('-session'))).toHaveLength(2);
      // The second turn's read_file ran as a local activity (a marker in the session's history).
      const sessionMarkers = histories.filter((h) => h.workflowId.endsWith('-session')).flatMap((h) => (h.history.events ?? []).filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity'));
      expect(sessionMarkers.length).toBeGreaterThan(0);
      expect(histories.filter((h) => h.workflowId.includes('/task-'))).toHaveLength(2);
      // Both shapes are in the matrix: the stamped goal's first run loads its setup as a local
      // activity and asks for no patch; the unstamped session's first run asks for its patches.
      const markers = (h: { history: History }) => (h.history.events ?? []).flatMap((e) => (e.markerRecordedEventAttributes ? [e.markerRecordedEventAttributes.markerName] : []));
      const [goalRun, sessionRun] = [histories.find((h) => h.workflowId.endsWith('-goal'))!, histories.find((h) => h.workflowId.endsWith('-session'))!];
      expect(markers(goalRun)).toContain('core_local_activity');
      expect(markers(goalRun)).not.toContain('core_patch');
      expect(markers(sessionRun)).toContain('core_patch');
      recorded[mode] = histories;
      // Tracing on exported spans while it ran.
      if (mode === 'on') await expect.poll(() => spansReceived, { timeout: 10_000 }).toBeGreaterThan(0);
    }, 180_000);
  }

  for (const from of ['on', 'off'] as const) {
    for (const to of ['on', 'off'] as const) {
      it(`histories recorded with tracing ${from} replay on a worker with tracing ${to}`, async () => {
        expect(recorded[from], 'recorded in the first test').toBeDefined();
        const { telemetry, bundle } = configs[to];
        const failures: string[] = [];
        let replayed = 0;
        for await (const result of Worker.runReplayHistories({ workflowBundle: bundle, sinks: telemetry.workerOptions.sinks, replayName: `tracing-${from}-${to}` }, recorded[from])) {
          replayed++;
          if (result.error) failures.push(`${result.workflowId}: ${result.error.message.split('\n')[0]}`);
        }
        expect(replayed).toBe(recorded[from].length);
        expect(failures).toEqual([]);
      }, 120_000);
    }
  }

  it("histories recorded with tracing on or off replay on a bundle without Keel's interceptors (headers are not replayed)", async () => {
    const failures: string[] = [];
    const histories = [...(recorded.on ?? []), ...(recorded.off ?? [])];
    expect(histories.length).toBeGreaterThan(0);
    for await (const result of Worker.runReplayHistories({ workflowBundle: bare, sinks: configs.off.telemetry.workerOptions.sinks, replayName: 'tracing-bare' }, histories)) {
      if (result.error) failures.push(`${result.workflowId}: ${result.error.message.split('\n')[0]}`);
    }
    expect(failures).toEqual([]);
  }, 120_000);
});
