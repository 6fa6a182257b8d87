// What integration tests share: a connection to the run's dev server, a fresh task
// queue per test, and the workflow code bundled once per test file.
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { inject } from 'vitest';

export interface TemporalTestEnv {
  address: string;
  namespace: string;
  client: Client;
  nativeConnection: NativeConnection;
  close(): Promise<void>;
}

export async function connectTestEnv(): Promise<TemporalTestEnv> {
  const address = inject('temporalAddress');
  const namespace = inject('temporalNamespace');
  const connection = await Connection.connect({ address });
  const nativeConnection = await NativeConnection.connect({ address });
  return {
    address,
    namespace,
    client: new Client({ connection, namespace }),
    nativeConnection,
    async close() {
      await nativeConnection.close();
      await connection.close();
    },
  };
}

export function uniqueTaskQueue(prefix = 'test'): string {
  return `${prefix}-${randomUUID()}`;
}

/** Bundles once; call it from beforeAll. Quiet, since webpack's report is noise here. */
export async function bundle(workflowsPath: string): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({ workflowsPath, logger: silentLogger });
}

const silentLogger = {
  log() {},
  trace() {},
  debug() {},
  info() {},
  warn() {},
  error(message: string, meta?: Record<string, unknown>) {
    console.error(message, meta);
  },
};
