import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from '../activities/index';
import { TOOL_WORKER_OPTIONS } from '../activities/tools/index';
import { keelDataConverter } from './encryption';

export const workflowsPath = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../workflows/index.ts');

export interface KeelWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  /** A prebuilt bundle (tests build it once per file); bundled from source when omitted. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  env?: NodeJS.ProcessEnv;
}

export interface KeelWorker {
  worker: Worker;
  /** Runs until shutdown (SIGINT/SIGTERM or worker.shutdown()), then releases MCP servers. */
  run(): Promise<void>;
}

export async function createKeelWorker(options: KeelWorkerOptions): Promise<KeelWorker> {
  const keelActivities = createActivities(options.env);
  const { activities } = keelActivities;
  const close = () => keelActivities.close();
  try {
    const dataConverter = await keelDataConverter(options.env);
    const worker = await Worker.create({
      connection: options.connection,
      namespace: options.namespace,
      taskQueue: options.taskQueue,
      ...(options.workflowBundle ? { workflowBundle: options.workflowBundle } : { workflowsPath }),
      activities,
      ...(dataConverter ? { dataConverter } : {}),
      // Cancellation reaches an activity only with a heartbeat response; a short throttle
      // lets an interrupt stop a command or a model stream within a second.
      ...TOOL_WORKER_OPTIONS,
    });
    return {
      worker,
      async run() {
        try {
          await worker.run();
        } finally {
          await close();
        }
      },
    };
  } catch (error) {
    await close();
    throw error;
  }
}
