// `npm run dev`: the local stack in one command — a Temporal dev server with a
// persistent SQLite file under .keel/dev, the Web UI, Keel's search attributes, and a
// Keel worker, the console and HTTP API. Ctrl-C (SIGINT), SIGTERM or SIGHUP drains the
// worker, then stops the console and the server, and only then exits (128 + the signal's
// number); a second signal exits at once (the server's exit hook kills it). The next run
// finds the same data again. The console's default workspace is `workspace/` in the
// checkout, created here (git ignores it), never the checkout itself.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NativeConnection } from '@temporalio/worker';
import { KeelClient } from '../client/keel-client';
import { startBanner, startServer, type RunningServer } from '../server/main';
import { DEFAULT_TASK_QUEUE } from '../workflows/defaults';
import { startWorkerTelemetry } from '../worker/telemetry';
import { startDevServer } from '../worker/dev-server';
import { createKeelWorker } from '../worker/worker';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// KEEL_DEV_DATA: another folder for the SQLite file (tests use a temp one).
const dataDir = process.env.KEEL_DEV_DATA || path.join(root, '.keel', 'dev');
mkdirSync(dataDir, { recursive: true });
const dbFile = path.join(dataDir, 'temporal.sqlite');
const port = Number(process.env.KEEL_DEV_PORT ?? 7233);
const uiPort = Number(process.env.KEEL_DEV_UI_PORT ?? 8233);
const taskQueue = process.env.KEEL_TASK_QUEUE || DEFAULT_TASK_QUEUE;
const workspace = path.join(root, 'workspace');
mkdirSync(workspace, { recursive: true });

// Signals are handled here, not by the SDK's runtime: it would stop the worker only, and a
// signal during start-up would leave the server running. Tracing and metrics as `npm run
// worker` has them, when OTEL_* asks for them: the runtime is installed once, with both.
const telemetry = await startWorkerTelemetry(process.env, { shutdownSignals: [] });
const SIGNALS = { SIGINT: 2, SIGTERM: 15, SIGHUP: 1 } as const;
let stopSignal: keyof typeof SIGNALS | null = null;
/** Read through a function: TypeScript cannot see a signal handler assign it. */
const signalled = (): keyof typeof SIGNALS | null => stopSignal;
let stoppedAt = 0;
let onStop: () => void = () => {};
for (const signal of Object.keys(SIGNALS) as (keyof typeof SIGNALS)[]) {
  process.on(signal, () => {
    // Ctrl-C in a terminal reaches this process twice (from the terminal, and forwarded by npm).
    if (stopSignal !== null && Date.now() - stoppedAt < 1_000) return;
    if (stopSignal !== null) {
      console.error(`keel dev: ${signal} again; exiting now.`);
      process.exit(128 + SIGNALS[signal]);
    }
    stopSignal = signal;
    stoppedAt = Date.now();
    console.log(`keel dev: ${signal}; stopping the worker, the console and the server...`);
    onStop();
  });
}

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
let keelWorker: Awaited<ReturnType<typeof createKeelWorker>> | undefined;
let api: { server: RunningServer; client: KeelClient } | undefined;
try {
  connection = await NativeConnection.connect({ address: server.address });
  if (signalled()) throw new Error('stopped while starting');
  const keel = await createKeelWorker({ connection, namespace: server.namespace, taskQueue, telemetry });
  keelWorker = keel;
  onStop = () => {
    if (keel.worker.getState() === 'RUNNING') keel.worker.shutdown();
  };
  // The console and HTTP API (keel serve) on 127.0.0.1; KEEL_SERVE_PORT=0 picks a free port.
  const client = await KeelClient.connect({ address: server.address, namespace: server.namespace, taskQueue });
  api = { client, server: await startServer({ keel: client, port: Number(process.env.KEEL_SERVE_PORT ?? 8280), workspace }) };
  console.log(
    [
      `keel dev: ${server.version}`,
      `  Temporal:    ${server.address} (namespace ${server.namespace})`,
      `  Web UI:      ${server.uiUrl}`,
      `  data:        ${path.relative(process.cwd(), dbFile)}`,
      `  worker:      task queue "${taskQueue}"`,
      ...telemetry.lines.map((l) => `  telemetry:   ${l}`),
      `  workspace:   ${path.relative(process.cwd(), workspace) || '.'} (the console's default)`,
      ...startBanner(api.server).map((l) => `  ${l}`),
      'Ctrl-C stops the worker, the console and the server.',
    ].join('\n'),
  );
  if (signalled()) throw new Error('stopped while starting');
  // Until a signal: polling stops, running activities get KEEL_SHUTDOWN_GRACE to finish.
  await keel.run();
  await telemetry.shutdown();
} catch (error) {
  if (!signalled()) {
    console.error(`keel dev: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  }
} finally {
  await api?.server.close();
  await api?.client.close();
  // A worker that was created but never ran (the API refused its settings) still holds the
  // connection: it is run until at once, which shuts it down, before the connection closes.
  if (keelWorker?.worker.getState() === 'INITIALIZED') await keelWorker.worker.runUntil(Promise.resolve()).catch(() => undefined);
  await connection?.close();
  console.log('keel dev: stopping the Temporal server...');
  await server.stop();
  console.log('keel dev: stopped.');
}
const stoppedBy = signalled();
if (stoppedBy) process.exit(128 + SIGNALS[stoppedBy]);
