// The @temporalio/ai-sdk peer's worker process (spawned by bench/suite.ts).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAnthropic } from '@ai-sdk/anthropic';
import { AiSdkPlugin } from '@temporalio/ai-sdk';
import { NativeConnection, Worker } from '@temporalio/worker';
import { peerToolActivities } from './tool-activity';

// @ai-sdk/anthropic appends /messages to its base URL; the stand-in serves /v1/messages.
const anthropic = createAnthropic({ apiKey: process.env.ANTHROPIC_API_KEY!, baseURL: `${process.env.ANTHROPIC_BASE_URL!}/v1` });
const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS! });
const worker = await Worker.create({
  connection,
  namespace: process.env.TEMPORAL_NAMESPACE ?? 'default',
  taskQueue: process.env.BENCH_TASK_QUEUE!,
  workflowsPath: path.join(path.dirname(fileURLToPath(import.meta.url)), 'ai-sdk-workflows.ts'),
  activities: peerToolActivities,
  plugins: [new AiSdkPlugin({ modelProvider: anthropic })],
  maxHeartbeatThrottleInterval: '500 milliseconds',
});
console.log('bench worker: polling');
process.once('SIGTERM', () => worker.shutdown());
await worker.run();
await connection.close();
