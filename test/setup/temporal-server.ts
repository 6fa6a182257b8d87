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
//
// The servers start in the background, as the workflow bundle is built: vitest starts no test
// file, not even a unit file, before every project's global setup has returned, and starting
// them (installing the CLI and the test server on a fresh machine) took 10-25 s of the run's
// start. This setup returns a directory at once; `servers.json` appears there when they are
// up (`error.txt` if they could not start), and test/setup/temporal-ready.ts makes every
// integration file wait for it before its first line runs.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { resolveTemporalCli, startDevServer } from '../../worker/dev-server';
import type { TemporalServers } from '../helpers/temporal-servers';
import { sharedOnce } from './shared-setup';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Where `servers.json` (a `TemporalServers`) or `error.txt` appears. */
    temporalServersDir: string;
  }
}

export default async function setup(project: TestProject) {
  const count = Math.max(1, Number(process.env.KEEL_TEST_SERVERS ?? project.globalConfig.maxWorkers) || 1);
  const { value: dir, teardown } = await sharedOnce('temporal dev server', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-test-temporal-'));
    const running = startAll(count, dir);
    return {
      value: dir,
      async stop() {
        const servers = await running;
        await Promise.all(servers.map((s) => s.stop()));
        await fs.rm(dir, { recursive: true, force: true });
      },
    };
  });
  project.provide('temporalServersDir', dir);
  return teardown;
}

/** Starts the servers and says so in `dir`; resolves to those that started (for the teardown), never rejects. */
async function startAll(count: number, dir: string): Promise<Array<{ stop(): Promise<void> }>> {
  const started = Date.now();
  const options = { port: 0, taskQueuePartitions: 1, readyTimeoutMs: Number(process.env.KEEL_TEST_SERVER_TIMEOUT_MS ?? 120_000), onLog: process.env.KEEL_TEST_SERVER_LOGS ? (line: string) => console.error(`[temporal] ${line}`) : undefined };
  // The time-skipping test server is resolved (installed on a fresh machine) beside them.
  const [results, testServerPath] = await Promise.all([
    Promise.allSettled(Array.from({ length: count }, () => startDevServer(options))),
    resolveTemporalCli('test-server-path').then(
      (p) => ({ ok: true as const, path: p }),
      (error: unknown) => ({ ok: false as const, error }),
    ),
  ]);
  const servers = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  const failure: unknown = failed ? failed.reason : testServerPath.ok ? null : testServerPath.error;
  if (failure !== null || !testServerPath.ok) {
    await Promise.all(servers.map((s) => s.stop()));
    await fs.writeFile(path.join(dir, 'error.txt'), `the run's Temporal dev servers did not start: ${failure instanceof Error ? failure.message : JSON.stringify(failure)}`);
    return [];
  }
  const value: TemporalServers = {
    addresses: servers.map((s) => s.address),
    namespace: servers[0]!.namespace,
    version: servers[0]!.version,
    testServerPath: testServerPath.path,
  };
  // Written whole, then renamed: a reader never sees half of it.
  await fs.writeFile(path.join(dir, 'servers.json.tmp'), JSON.stringify(value));
  await fs.rename(path.join(dir, 'servers.json.tmp'), path.join(dir, 'servers.json'));
  console.log(`temporal dev servers: ${count} × ${value.version} on ${value.addresses.join(', ')}, ready in ${Date.now() - started} ms`);
  return servers;
}
