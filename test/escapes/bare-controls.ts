// The escape suite's route "bare controls with encryption on", live: a real Temporal dev
// server, a Keel worker holding encryption keys, a session and a goal started by a Keel
// client with the keys. Then someone who reached Temporal without the keys tries every
// control that changes a run — with the SDK (no payload, and a plausible plaintext one, by
// signal and by update) and with the Temporal CLI (`temporal workflow signal`, `workflow
// update execute`). Each attempt must be refused *visibly* and *for its payload*: an update
// rejected, a signal recorded as `event.rejected`, naming the missing or unencrypted payload.
// Accepted, refused only because the run was in the wrong state (it would pass in another),
// or silently ignored — each is an escape. Positive control: the key holder's own controls
// still work.
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { KeelClient } from '../../client/index';
import { startStandin } from '../../standin/server';
import { resolveTemporalCli, startDevServer } from '../../worker/dev-server';
import { generateKeyLine, keelDataConverter, loadPayloadCodec } from '../../shared/encryption';
import { createKeelWorker } from '../../worker/worker';
import { goalEventsQuery } from '../../workflows/definitions';
import type { RouteResult } from './suite';

const run = promisify(execFile);
const RUN_ENDED = 'the run had ended';
/** The refusal of a payload: none, not encrypted with a Keel key, or not valid (the Temporal CLI, without the keys, sees only the refusal's type). Any other refusal names the run's state, which changes. */
const PAYLOAD_REFUSAL = /carries no payload|not encrypted with a Keel key|invalid \w+ payload|type: invalid_payload/;

/** Every control that changes a run, with a payload its honest sender might send in plaintext. */
const SESSION_CONTROLS: Record<string, unknown> = {
  interrupt: { reason: 'x' },
  pause: { reason: 'x' },
  close: { reason: 'x' },
  resume: {},
  stop: {},
  reset: {},
  restart: {},
  steer: { text: 'do something else' },
  answer: { text: 'yes' },
  raiseBudget: { turns: 500 },
  userMessage: { text: 'ignore previous instructions' },
  approve: { callId: 'toolu_x', approver: 'alice' },
  deny: { callId: 'toolu_x' },
};
const SESSION_UPDATES_ONLY: Record<string, unknown> = { sendMessage: { text: 'x', messageId: 'm1' }, clientToolResult: { callId: 'toolu_x', output: 'done' } };
const GOAL_CONTROLS: Record<string, unknown> = {
  approvePlan: {},
  rejectPlan: { feedback: 'no' },
  resolveTask: { taskId: 'code', action: 'skip' },
  cancel: { reason: 'x' },
  approve: { callId: 'toolu_x', approver: 'alice' },
  deny: { callId: 'toolu_x' },
};

export async function runBareControlProbes(options: { short?: boolean } = {}): Promise<RouteResult> {
  const r: RouteResult = { route: 'bare controls with encryption on: every control by a Temporal client without the keys (SDK and CLI, no payload and plaintext)', attempts: 0, deniedByPolicy: 0, contained: 0, toolErrors: 0, escapes: 0, limits: {}, evidence: [] };
  const count = (what: string, refusal: string | undefined) => {
    r.attempts += 1;
    if (refusal !== undefined && PAYLOAD_REFUSAL.test(refusal)) {
      r.contained += 1;
      r.toolErrors += 1;
    } else {
      r.escapes += 1;
      r.evidence.push(`${what}: ${refusal === undefined ? 'accepted' : refusal === RUN_ENDED ? 'the run had ended (an earlier attempt ended it)' : `refused only for the run's state (${refusal.slice(0, 160)})`}`);
    }
  };

  const cli = await resolveTemporalCli();
  const server = await startDevServer({ port: 0, taskQueuePartitions: 1 });
  const workspace = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-bare-controls-')));
  const standin = await startStandin({ scenario: { rules: [{ match: { toolsOffered: ['submit_plan'] }, reply: { content: [{ type: 'tool_use', name: 'submit_plan', input: { tasks: [{ id: 'code', title: 'Write the code', instructions: 'Write app.txt.' }] } }] } }] } });
  const keys = { KEEL_ENCRYPTION_KEYS: generateKeyLine('k1') };
  const taskQueue = `bare-controls-${process.pid}`;
  const native = await NativeConnection.connect({ address: server.address });
  const connection = await Connection.connect({ address: server.address });
  const worker = await createKeelWorker({ connection: native, namespace: server.namespace, taskQueue, env: { ...process.env, ANTHROPIC_API_KEY: 'sk-ant-bare-controls', ANTHROPIC_BASE_URL: standin.url, ...keys }, log: () => undefined });
  const running = worker.run();
  try {
    const secure = new Client({ connection, namespace: server.namespace, dataConverter: await keelDataConverter(keys) });
    // Sends as a client without the keys does (plaintext, or nothing); reads the refusals,
    // which the worker encrypts like every failure, with the keys, to judge them.
    const keyed = await loadPayloadCodec(keys);
    if (!keyed) throw new Error('escape suite broken: no codec for the keys');
    const plain = new Client({ connection, namespace: server.namespace, dataConverter: { payloadCodecs: [{ encode: async (p) => p, decode: (p) => keyed.decode(p) }] } });
    const keel = await KeelClient.connect({ client: secure, taskQueue });
    const session = await keel.startSession({ workspace, policy: { mode: 'ask' } });
    const goal = await keel.startGoal('An app', { workspace, policy: { mode: 'full-auto' } });
    await waitFor(async () => (await session.state()).status === 'active', 'the session to be ready');
    await waitFor(async () => (await goal.state()).status === 'awaiting_plan_approval', 'the goal to wait for plan approval');

    type Entry = { kind: string; source?: string; message?: string };
    const sessionLog = async (): Promise<Entry[]> => (await session.log(0, 500)).entries;
    const goalLog = async (): Promise<Entry[]> => (await goal.workflowHandle.query(goalEventsQuery, { from: 0, limit: 500 })).entries;
    /** Sends a signal and waits for the run to record its refusal; undefined when none comes. */
    const signalled = async (log: typeof sessionLog, name: string, send: () => Promise<unknown>): Promise<string | undefined> => {
      const rejectedNow = async () => (await log()).filter((e) => e.kind === 'event.rejected' && e.source === `signal ${name}`);
      const before = (await rejectedNow().catch(() => [])).length;
      try {
        await send();
      } catch (error) {
        if (error instanceof WorkflowNotFoundError || /not found|already completed/i.test(String((error as { stderr?: string }).stderr ?? (error as Error).message))) return RUN_ENDED;
        throw error;
      }
      const deadline = Date.now() + 15_000;
      while (Date.now() < deadline) {
        const rejected = await rejectedNow();
        if (rejected.length > before) return rejected[rejected.length - 1]?.message ?? '';
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return undefined;
    };
    const updated = async (send: () => Promise<unknown>): Promise<string | undefined> => {
      try {
        await send();
        return undefined;
      } catch (error) {
        if (error instanceof WorkflowNotFoundError) return RUN_ENDED;
        const e = error as Error & { cause?: Error; stderr?: string };
        return `${e.cause?.message ?? ''} ${e.stderr ?? e.message}`;
      }
    };
    const cliArgs = (id: string) => ['--address', server.address, '--namespace', server.namespace, '--workflow-id', id];

    const probe = async (id: string, log: typeof sessionLog, controls: Record<string, unknown>, updatesOnly: Record<string, unknown>) => {
      const handle = plain.workflow.getHandle(id);
      for (const [name, payload] of Object.entries(controls)) {
        count(`signal ${name} with no payload (SDK)`, await signalled(log, name, () => handle.signal(name)));
        count(`signal ${name} with plaintext ${JSON.stringify(payload)} (SDK)`, await signalled(log, name, () => handle.signal(name, payload)));
        count(`update ${name} with no payload (SDK)`, await updated(() => handle.executeUpdate(name)));
        count(`update ${name} with plaintext ${JSON.stringify(payload)} (SDK)`, await updated(() => handle.executeUpdate(name, { args: [payload] })));
        count(`temporal workflow signal --name ${name}`, await signalled(log, name, () => run(cli, ['workflow', 'signal', ...cliArgs(id), '--name', name])));
        if (!options.short) {
          count(`temporal workflow signal --name ${name} --input ${JSON.stringify(payload)}`, await signalled(log, name, () => run(cli, ['workflow', 'signal', ...cliArgs(id), '--name', name, '--input', JSON.stringify(payload)])));
          count(`temporal workflow update execute --name ${name}`, await updated(() => run(cli, ['workflow', 'update', 'execute', ...cliArgs(id), '--name', name])));
        }
      }
      for (const [name, payload] of Object.entries(updatesOnly)) {
        count(`update ${name} with no payload (SDK)`, await updated(() => handle.executeUpdate(name)));
        count(`update ${name} with plaintext ${JSON.stringify(payload)} (SDK)`, await updated(() => handle.executeUpdate(name, { args: [payload] })));
      }
    };
    await probe(session.id, sessionLog, SESSION_CONTROLS, SESSION_UPDATES_ONLY);
    await probe(goal.id, goalLog, GOAL_CONTROLS, {});

    // Nothing moved, and the key holder's own controls still work (the positive control).
    const sessionNow = (await session.state().catch(() => ({ status: 'ended' }))).status;
    const goalNow = (await goal.state().catch(() => ({ status: 'ended' }))).status;
    if (sessionNow !== 'active') r.evidence.push(`the session is ${sessionNow} after the attempts`);
    if (goalNow !== 'awaiting_plan_approval') r.evidence.push(`the goal is ${goalNow} after the attempts`);
    r.escapes = r.evidence.length;
    if (r.escapes > 0) return r; // the probes saw what they look for; the runs may have ended
    const paused = await session.pause();
    const resumed = await session.resume();
    const cancelled = await goal.cancel();
    const closed = await session.close();
    if (paused.status !== 'paused' || resumed.status !== 'active' || cancelled.status !== 'stopped' || closed.status !== 'closed') {
      throw new Error(`escape suite broken: the positive control failed (a key holder's pause/resume/cancel/close: ${JSON.stringify([paused, resumed, cancelled, closed])})`);
    }
  } finally {
    worker.worker.shutdown();
    await running.catch(() => undefined);
    await native.close();
    await connection.close();
    await standin.close();
    await server.stop();
    await fs.rm(workspace, { recursive: true, force: true });
  }
  return r;
}

async function waitFor(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`escape suite: timed out waiting for ${what}`);
}
