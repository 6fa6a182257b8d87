// Which history events one Keel session writes, in order: `npx tsx bench/history-trace.ts
// [turns=3] [steps=3]`. Starts its own Temporal dev server (in memory), the model stand-in
// and a Keel worker, runs the bench's conversation (bench/suite/script.ts) the way the bench's
// `concurrent` scenario does (KeelClient, SessionHandle.send(), close), and prints every event
// of the session's history with what it was for (signal, update, activity, marker, search
// attributes), then the count per type. What docs/performance.md's "which events remain" cites.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { NativeConnection } from '@temporalio/worker';
import { ClosableConnection } from '../client/grpc-retry';
import { KeelClient } from '../client/keel-client';
import { startStandin } from '../standin/server';
import { startDevServer } from '../worker/dev-server';
import { createKeelWorker } from '../worker/worker';
import { eventNote, eventTypeName } from './suite/history-events';
import { BENCH_MODEL, benchScenario, turnText, writeStepFiles } from './suite/script';

const turns = Number(process.argv[2] ?? 3);
const steps = Number(process.argv[3] ?? 3);

const server = await startDevServer({ port: 0, readyTimeoutMs: 120_000 });
const standin = await startStandin({ scenario: benchScenario([steps]) });
const workspace = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-trace-')));
await writeStepFiles(workspace, [steps]);
const native = await NativeConnection.connect({ address: server.address });
const connection = await ClosableConnection.connect({ address: server.address });
const client = new Client({ connection, namespace: server.namespace });
const taskQueue = 'trace';
const keel = await createKeelWorker({ connection: native, namespace: server.namespace, taskQueue, env: { ANTHROPIC_API_KEY: 'sk-ant-trace', ANTHROPIC_BASE_URL: standin.url } });
const running = keel.run();
try {
  const sessions = await KeelClient.connect({ client, taskQueue });
  const session = await sessions.startSession({ workspace, model: BENCH_MODEL, policy: { mode: 'full-auto' } });
  for (let t = 1; t <= turns; t++) await session.send(turnText(steps, `trace ${t}`));
  await session.close();
  const history = await client.workflow.getHandle(session.id).fetchHistory();
  const counts = new Map<string, number>();
  const bytes = new Map<string, number>();
  for (const event of history.events ?? []) {
    const name = eventTypeName(Number(event.eventType));
    // The event as the server stores it (protobuf): what each costs in history bytes.
    const size = proto.temporal.api.history.v1.HistoryEvent.encode(event).finish().length;
    counts.set(name, (counts.get(name) ?? 0) + 1);
    bytes.set(name, (bytes.get(name) ?? 0) + size);
    console.log(`${String(event.eventId).padStart(4)} ${name}${eventNote(event)} (${size} B)`);
  }
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  const totalBytes = [...bytes.values()].reduce((a, b) => a + b, 0);
  console.log(`\n${total} events, ${totalBytes} bytes for ${turns * steps} steps (${(total / (turns * steps)).toFixed(2)} events, ${Math.round(totalBytes / (turns * steps))} bytes per step)`);
  for (const [name, n] of [...counts].sort((a, b) => b[1] - a[1])) console.log(`${String(n).padStart(4)} ${name} (${bytes.get(name)} B)`);
} finally {
  keel.worker.shutdown();
  await running;
  await native.close();
  await connection.close();
  await standin.close();
  await server.stop();
  await fs.rm(workspace, { recursive: true, force: true });
}
