// `npm run worker` (from source) and `npm start` (compiled): one Keel worker against
// TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE, with tracing and metrics when OTEL_* asks for them.
import { NativeConnection } from '@temporalio/worker';
import { loadWorkerConfig } from './config';
import { StoreProbeError } from './store-probe';
import { startWorkerTelemetry } from './telemetry';
import { createKeelWorker } from './worker';
import { connectWaiting, temporalWaitMs } from './temporal-wait';

const config = loadWorkerConfig();
const telemetry = await startWorkerTelemetry();
let connection: NativeConnection;
try {
  // Waited for, one line a try (worker/temporal-wait.ts): a fleet need not start in order.
  connection = await connectWaiting({
    connect: () => NativeConnection.connect(config.connection),
    address: config.connection.address ?? 'localhost:7233',
    namespace: config.namespace,
    log: (line) => console.log(line),
    horizonMs: temporalWaitMs(),
  });
} catch (error) {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
}
let keel: Awaited<ReturnType<typeof createKeelWorker>>;
try {
  keel = await createKeelWorker({ connection, namespace: config.namespace, taskQueue: config.taskQueue, telemetry });
} catch (error) {
  // A store this worker cannot use, or not the fleet's: one line, and no polling.
  if (error instanceof StoreProbeError) {
    console.error(error.message);
    process.exit(1);
  }
  throw error;
}
for (const line of telemetry.lines) console.log(`keel worker: ${line}`);
console.log(`keel worker: polling task queue "${config.taskQueue}" on ${config.connection.address} (namespace ${config.namespace})`);
// SIGINT/SIGTERM: polling stops, running activities get KEEL_SHUTDOWN_GRACE to finish,
// the rest are cancelled (retried on another worker), then MCP servers are closed.
await keel.run();
await connection.close();
await telemetry.shutdown();
console.log('keel worker: stopped');
