// A Keel worker process for the chaos suite: the real worker (worker/worker.ts) on a
// prebuilt workflow bundle (KEEL_CHAOS_BUNDLE), so a worker restarted after kill -9 polls
// within seconds instead of bundling again. The default store: no KEEL_STORE_DIR.
// KEEL_CHAOS_STICKY_QUEUE_MS: its sticky queue's timeout (ChaosOptions.stickyQueueTimeoutMs).
// It exits when the harness that started it is gone, however it went (a test fork killed
// after a time-out runs no cleanup): an orphan worker would keep taking tasks.
import { NativeConnection } from '@temporalio/worker';
import { createKeelWorker } from '../../worker/worker';

const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) process.exit(1);
}, 1_000).unref();

const address = process.env.TEMPORAL_ADDRESS!;
const connection = await NativeConnection.connect({ address });
const keel = await createKeelWorker({
  connection,
  namespace: process.env.TEMPORAL_NAMESPACE ?? 'default',
  taskQueue: process.env.KEEL_TASK_QUEUE!,
  workflowBundle: { codePath: process.env.KEEL_CHAOS_BUNDLE! },
  ...(process.env.KEEL_CHAOS_STICKY_QUEUE_MS ? { stickyQueueTimeoutMs: Number(process.env.KEEL_CHAOS_STICKY_QUEUE_MS) } : {}),
});
console.log('chaos worker: polling');
await keel.run();
