// The worker container's HEALTHCHECK: `node --import tsx worker/healthcheck.ts`, exit 0
// when healthy. Healthy means the Temporal frontend answers (with the worker's own
// connection settings) AND a worker in this container polls the task queue: the server
// lists the queue's recent pollers by identity (`<pid>@<hostname>`), and a container's
// hostname is its own. A worker that lost its connection or died is noticed once the
// server stops listing it (about a minute after its last poll).
import os from 'node:os';
import { Connection } from '@temporalio/client';
import { loadWorkerConfig } from './config';

export interface HealthResult {
  healthy: boolean;
  reason: string;
}

export async function checkWorkerHealth(env: NodeJS.ProcessEnv = process.env, hostname = os.hostname(), timeoutMs = 5_000): Promise<HealthResult> {
  const config = loadWorkerConfig(env);
  let connection: Connection;
  try {
    connection = await Connection.connect({ ...config.connection, connectTimeout: timeoutMs });
  } catch (error) {
    return { healthy: false, reason: `Temporal at ${config.connection.address} is unreachable: ${String(error)}` };
  }
  try {
    const pollers = [];
    for (const taskQueueType of [1, 2] as const) {
      // 1: workflow tasks, 2: activity tasks.
      const response = await connection.withDeadline(Date.now() + timeoutMs, () =>
        connection.workflowService.describeTaskQueue({ namespace: config.namespace, taskQueue: { name: config.taskQueue }, taskQueueType }),
      );
      pollers.push(...(response.pollers ?? []));
    }
    const ours = pollers.filter((p) => p.identity?.endsWith(`@${hostname}`));
    if (ours.length === 0) {
      return { healthy: false, reason: `no worker on ${hostname} polls task queue "${config.taskQueue}" (namespace ${config.namespace})` };
    }
    return { healthy: true, reason: `${ours[0]?.identity ?? hostname} polls task queue "${config.taskQueue}"` };
  } catch (error) {
    return { healthy: false, reason: `cannot describe task queue "${config.taskQueue}": ${String(error)}` };
  } finally {
    await connection.close();
  }
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  const result = await checkWorkerHealth();
  console.log(`keel healthcheck: ${result.healthy ? 'healthy' : 'unhealthy'}: ${result.reason}`);
  process.exit(result.healthy ? 0 : 1);
}
