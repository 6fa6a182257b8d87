// `npm run dev`: the local stack in one command — a Temporal dev server with a
// persistent SQLite file under .keel/dev, the Web UI, Keel's search attributes, and a
// Keel worker. Ctrl-C drains the worker, then stops the server; the next run finds the
// same data again.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NativeConnection } from '@temporalio/worker';
import { KeelClient } from '../client/keel-client';
import { startBanner, startServer, type RunningServer } from '../server/main';
import { DEFAULT_TASK_QUEUE } from '../worker/config';
import { startWorkerTelemetry } from '../worker/telemetry';
import { startDevServer } from '../worker/dev-server';
import { createKeelWorker } from '../worker/worker';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dataDir = path.join(root, '.keel', 'dev');
mkdirSync(dataDir, { recursive: true });
const dbFile = path.join(dataDir, 'temporal.sqlite');
const port = Number(process.env.KEEL_DEV_PORT ?? 7233);
const uiPort = Number(process.env.KEEL_DEV_UI_PORT ?? 8233);
const taskQueue = process.env.KEEL_TASK_QUEUE || DEFAULT_TASK_QUEUE;

console.log('keel dev: starting the Temporal dev server...');
const server = await startDevServer({
  port,
  uiPort,
  dbFile,
  onLog: (line) => console.error(`[temporal] ${line}`),
}).catch((error: unknown) => {
  console.error(`keel dev: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});

let connection: NativeConnection | undefined;
let api: { server: RunningServer; client: KeelClient } | undefined;
try {
  // Tracing and metrics as `npm run worker` has them, when OTEL_* asks for them.
  const telemetry = await startWorkerTelemetry();
  connection = await NativeConnection.connect({ address: server.address });
  const keel = await createKeelWorker({ connection, namespace: server.namespace, taskQueue, telemetry });
  // The console and HTTP API (keel serve) on 127.0.0.1; KEEL_SERVE_PORT=0 picks a free port.
  const client = await KeelClient.connect({ address: server.address, namespace: server.namespace, taskQueue });
  api = { client, server: await startServer({ keel: client, port: Number(process.env.KEEL_SERVE_PORT ?? 8280), workspace: process.cwd() }) };
  console.log(
    [
      `keel dev: ${server.version}`,
      `  Temporal:    ${server.address} (namespace ${server.namespace})`,
      `  Web UI:      ${server.uiUrl}`,
      `  data:        ${path.relative(process.cwd(), dbFile)}`,
      `  worker:      task queue "${taskQueue}"`,
      ...telemetry.lines.map((l) => `  telemetry:   ${l}`),
      ...startBanner(api.server).map((l) => `  ${l}`),
      'Ctrl-C stops the worker and the server.',
    ].join('\n'),
  );
  // The SDK's runtime turns SIGINT/SIGTERM into a graceful worker shutdown.
  await keel.run();
  await telemetry.shutdown();
} catch (error) {
  console.error(`keel dev: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
} finally {
  await api?.server.close();
  await api?.client.close();
  await connection?.close();
  console.log('keel dev: stopping the Temporal server...');
  await server.stop();
  console.log('keel dev: stopped.');
}
