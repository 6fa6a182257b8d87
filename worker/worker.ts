import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from '../activities/index';
import { TOOL_WORKER_OPTIONS } from '../activities/tools/index';
import { keelDataConverter } from './encryption';
import { shutdownGraceMs } from './shutdown';
import type { Telemetry } from './telemetry';
import { prebuiltWorkflowBundle } from './workflow-bundle';

export const workflowsPath = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../workflows/index.ts');

export interface KeelWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  /** A prebuilt bundle (tests build it once per file); else dist/workflow-bundle.js when compiled, else bundled from source. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  env?: NodeJS.ProcessEnv;
  /** Tracing and metrics (worker/telemetry.ts); none when omitted. */
  telemetry?: Telemetry;
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
    const telemetry = options.telemetry;
    const prebuilt = options.workflowBundle ? null : prebuiltWorkflowBundle(options.env, { tracing: telemetry?.tracing ?? false });
    const graceMs = shutdownGraceMs(options.env);
    const worker = await Worker.create({
      connection: options.connection,
      namespace: options.namespace,
      taskQueue: options.taskQueue,
      ...(options.workflowBundle ? { workflowBundle: options.workflowBundle } : prebuilt ? { workflowBundle: { codePath: prebuilt } } : { workflowsPath }),
      activities,
      ...(dataConverter ? { dataConverter } : {}),
      // Cancellation reaches an activity only with a heartbeat response; a short throttle
      // lets an interrupt stop a command or a model stream within a second.
      ...TOOL_WORKER_OPTIONS,
      // On shutdown: stop polling, let running activities finish this long, then cancel
      // them (they retry elsewhere); five more seconds for them to acknowledge.
      shutdownGraceTime: graceMs,
      shutdownForceTime: graceMs + 5_000,
      ...telemetry?.workerOptions,
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
