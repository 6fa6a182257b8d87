// The floor's worker process (spawned by bench/suite.ts): TEMPORAL_ADDRESS, BENCH_TASK_QUEUE,
// ANTHROPIC_BASE_URL. Prints "bench worker: polling" when it is.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker } from '@temporalio/worker';
import { ACTIVITY_WORKER_OPTIONS } from '../../activities/tools/definitions';
import { createFloorActivities } from './activities';

const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS! });
const worker = await Worker.create({
  connection,
  namespace: process.env.TEMPORAL_NAMESPACE ?? 'default',
  taskQueue: process.env.BENCH_TASK_QUEUE!,
  workflowsPath: path.join(path.dirname(fileURLToPath(import.meta.url)), 'workflows.ts'),
  activities: createFloorActivities(process.env),
  ...ACTIVITY_WORKER_OPTIONS,
  ...(process.env.BENCH_MAX_CACHED ? { maxCachedWorkflows: Number(process.env.BENCH_MAX_CACHED) } : {}),
});
console.log('bench worker: polling');
process.once('SIGTERM', () => worker.shutdown());
await worker.run();
await connection.close();
