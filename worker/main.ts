// `npm run worker`: one Keel worker against TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE.
import { NativeConnection } from '@temporalio/worker';
import { loadWorkerConfig } from './config';
import { createKeelWorker } from './worker';

const config = loadWorkerConfig();
let connection: NativeConnection;
try {
  connection = await NativeConnection.connect(config.connection);
} catch (error) {
  console.error(
    `keel worker: cannot reach Temporal at ${config.connection.address} (namespace ${config.namespace}).\n` +
      `Start a local server with \`npm run dev\`, or set TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE.\n${String(error)}`,
  );
  process.exit(1);
}
const keel = await createKeelWorker({ connection, namespace: config.namespace, taskQueue: config.taskQueue });
console.log(`keel worker: polling task queue "${config.taskQueue}" on ${config.connection.address} (namespace ${config.namespace})`);
// The SDK turns SIGINT/SIGTERM into a shutdown: polling stops, running activities are
// cancelled (Temporal retries them on another worker) and workflow tasks finish first.
await keel.run();
await connection.close();
console.log('keel worker: stopped');
