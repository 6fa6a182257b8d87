// How long the first message to a session waits after its worker process is replaced:
// `npx tsx bench/restart-wait.ts [restarts=6]`. A real restart, as a deploy does it: the
// production entry (worker/main.ts) in a process of its own, stopped with SIGTERM (graceful),
// then a new process on the same task queue; the message is sent once the new one polls.
// Runs against a dev server with one partition per task queue (what the tests use) and one
// with the server's default four (worker/dev-server.ts `taskQueuePartitions`), and prints each send()'s time and whether a workflow task timed out on the stopped worker's
// queue. Writes bench/results/restart-wait.json.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { KeelClient } from '../client/index';
import { ClosableConnection } from '../client/grpc-retry';
import { startStandin } from '../standin/server';
import { waitForOutput } from '../test/fixtures/process-output';
import { startDevServer } from '../worker/dev-server';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const restarts = Number(process.argv[2] ?? 6);
const { EventType } = proto.temporal.api.enums.v1;

async function startWorker(env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'worker/main.ts')], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  for (const stream of [child.stdout, child.stderr]) stream.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const ended = new Promise((resolve) => child.once('close', resolve));
  await waitForOutput(/keel worker: polling/, { child, text: () => out, ended, timeoutMs: 120_000, what: 'the worker did not start polling' });
  return child;
}
const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    // Graceful: nothing is running, so it stops at once; SIGKILL only if it hangs.
    const hung = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('exit', () => {
      clearTimeout(hung);
      resolve();
    });
    child.kill('SIGTERM');
  });

const standin = await startStandin({ scenario: { rules: [{ match: {}, reply: { content: [{ type: 'text', text: 'ok' }] } }] } });
const workspace = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-restart-')));
const results: Record<string, unknown> = {};
for (const partitions of [1, 4] as const) {
  const server = await startDevServer({ port: 0, readyTimeoutMs: 120_000, ...(partitions === 1 ? { taskQueuePartitions: 1 } : {}) });
  const connection = await ClosableConnection.connect({ address: server.address });
  const client = new Client({ connection, namespace: server.namespace });
  const taskQueue = `restart-${partitions}`;
  const env = { ...process.env, TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: server.namespace, KEEL_TASK_QUEUE: taskQueue, ANTHROPIC_API_KEY: 'sk-ant-standin', ANTHROPIC_BASE_URL: standin.url };
  const keel = await KeelClient.connect({ client, taskQueue });
  let worker = await startWorker(env);
  const session = await keel.startSession({ workspace, policy: { mode: 'full-auto' } });
  await session.send('first');
  const rows: { sendMs: number; timedOut: number }[] = [];
  for (let i = 0; i < restarts; i += 1) {
    await stop(worker);
    const before = (await session.workflowHandle.fetchHistory()).events?.length ?? 0;
    worker = await startWorker(env);
    const sent = Date.now();
    await session.send(`message ${i}`);
    const sendMs = Date.now() - sent;
    const after = ((await session.workflowHandle.fetchHistory()).events ?? []).slice(before);
    const timedOut = after.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT).length;
    rows.push({ sendMs, timedOut });
    console.log(`${partitions} partition(s), restart ${i + 1}: send() ${sendMs} ms, workflow tasks timed out ${timedOut}`);
  }
  await stop(worker);
  results[`partitions${partitions}`] = rows;
  await connection.close();
  await server.stop();
}
await standin.close();
await fs.rm(workspace, { recursive: true, force: true });
await fs.writeFile(path.join(root, 'bench/results/restart-wait.json'), `${JSON.stringify({ when: new Date().toISOString(), command: `npx tsx bench/restart-wait.ts ${restarts}`, results }, null, 2)}\n`);
