import { loadClientConnectConfig } from '@temporalio/envconfig';
import type { NativeConnectionOptions } from '@temporalio/worker';
import { DEFAULT_TASK_QUEUE } from '../workflows/defaults';
import { keelEnv } from '../shared/env';

export interface WorkerConfig {
  connection: NativeConnectionOptions & { address: string };
  namespace: string;
  taskQueue: string;
}

/**
 * Connection settings the way every Temporal tool reads them (TEMPORAL_ADDRESS,
 * TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*, or a profile in the Temporal
 * config file), defaulting to the local dev server. KEEL_TASK_QUEUE picks the queue.
 */
export function loadWorkerConfig(env: NodeJS.ProcessEnv = process.env): WorkerConfig {
  const { connectionOptions, namespace } = loadClientConnectConfig({ overrideEnvVars: env as Record<string, string> });
  return {
    connection: { ...connectionOptions, address: connectionOptions.address ?? 'localhost:7233' },
    namespace: namespace ?? 'default',
    taskQueue: keelEnv(env, 'KEEL_TASK_QUEUE') ?? DEFAULT_TASK_QUEUE,
  };
}
