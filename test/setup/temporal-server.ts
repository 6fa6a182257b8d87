// Global setup of the integration project: real `temporal server start-dev`s for the whole
// run, on free ports, headless, in memory, with Keel's search attributes, and one partition
// per task queue (worker/dev-server.ts `taskQueuePartitions` says why). One server per test
// fork (the project's maxWorkers; KEEL_TEST_SERVERS overrides): the dev server keeps its
// in-memory database behind one SQLite connection (temporalio/temporal's sqlite plugin opens
// one unless configured), so every write of every test queues on it. With one server for
// two forks the run used ~155 % of 2 cores, and a third fork made each test 50 % slower for
// 4 % more CPU. Each fork talks to its own (test/helpers/temporal.ts `testTemporalAddress()`,
// by VITEST_POOL_ID). If one cannot start, every integration test fails with the reason —
// none is skipped.
import type { TestProject } from 'vitest/node';
import { resolveTemporalCli, startDevServer } from '../../worker/dev-server';
import { sharedOnce } from './shared-setup';

declare module 'vitest' {
  export interface ProvidedContext {
    /** One dev server per test fork; a fork uses `temporalAddresses[(VITEST_POOL_ID - 1) % length]`. */
    temporalAddresses: string[];
    temporalNamespace: string;
    temporalVersion: string;
    temporalTestServerPath: string;
  }
}

export default async function setup(project: TestProject) {
  // As many as the project has forks (vitest.config.ts, KEEL_TEST_WORKERS or --maxWorkers).
  const count = Math.max(1, Number(process.env.KEEL_TEST_SERVERS ?? project.globalConfig.maxWorkers) || 1);
  const { value, teardown } = await sharedOnce('temporal dev server', async () => {
    const started = Date.now();
    const results = await Promise.allSettled(
      Array.from({ length: count }, () =>
        startDevServer({
          port: 0,
          taskQueuePartitions: 1,
          readyTimeoutMs: Number(process.env.KEEL_TEST_SERVER_TIMEOUT_MS ?? 120_000),
          onLog: process.env.KEEL_TEST_SERVER_LOGS ? (line) => console.error(`[temporal] ${line}`) : undefined,
        }),
      ),
    );
    const servers = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) {
      await Promise.all(servers.map((s) => s.stop()));
      throw failed.reason;
    }
    console.log(`temporal dev servers: ${count} × ${servers[0]!.version} on ${servers.map((s) => s.address).join(', ')}, ready in ${Date.now() - started} ms`);
    const testServerPath = await resolveTemporalCli('test-server-path');
    return { value: { servers, testServerPath }, stop: async () => void (await Promise.all(servers.map((s) => s.stop()))) };
  });
  project.provide('temporalAddresses', value.servers.map((s) => s.address));
  project.provide('temporalNamespace', value.servers[0]!.namespace);
  project.provide('temporalVersion', value.servers[0]!.version);
  project.provide('temporalTestServerPath', value.testServerPath);
  return teardown;
}
