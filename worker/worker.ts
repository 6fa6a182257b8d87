import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { activities } from '../activities/index';

export const workflowsPath = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../workflows/index.ts');

export interface KeelWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  /** A prebuilt bundle (tests build it once per file); bundled from source when omitted. */
  workflowBundle?: WorkerOptions['workflowBundle'];
}

export async function createKeelWorker(options: KeelWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    ...(options.workflowBundle ? { workflowBundle: options.workflowBundle } : { workflowsPath }),
    activities,
  });
}
