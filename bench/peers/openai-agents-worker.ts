// The @temporalio/openai-agents peer's worker process (spawned by bench/suite.ts).
// OPENAI_BASE_URL points the OpenAI client at the stand-in's /v1/responses.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { OpenAIProvider } from '@openai/agents-openai';
import { OpenAIAgentsPlugin } from '@temporalio/openai-agents';
import { NativeConnection, Worker } from '@temporalio/worker';
import { peerToolActivities } from './tool-activity';

const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS! });
const worker = await Worker.create({
  connection,
  namespace: process.env.TEMPORAL_NAMESPACE ?? 'default',
  taskQueue: process.env.BENCH_TASK_QUEUE!,
  workflowsPath: path.join(path.dirname(fileURLToPath(import.meta.url)), 'openai-agents-workflows.ts'),
  activities: peerToolActivities,
  plugins: [new OpenAIAgentsPlugin({ modelProvider: new OpenAIProvider({ apiKey: process.env.OPENAI_API_KEY!, baseURL: process.env.OPENAI_BASE_URL! }), modelParams: { startToCloseTimeout: '2 minutes' } })],
  // @openai/agents-core 0.11 fails to load in the workflow sandbox ("Automatic publicPath
  // is not supported") unless webpack inlines its dynamic imports.
  bundlerOptions: { webpackConfigHook: (config) => ({ ...config, module: { ...config.module, parser: { ...config.module?.parser, javascript: { ...(config.module?.parser?.javascript as object), dynamicImportMode: 'eager' } } } }) },
  maxHeartbeatThrottleInterval: '500 milliseconds',
});
console.log('bench worker: polling');
process.once('SIGTERM', () => worker.shutdown());
await worker.run();
await connection.close();
