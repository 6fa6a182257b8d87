// Global setup of the integration project: one real `temporal server start-dev` for
// the whole run, on a free port, headless, in memory, with Keel's search attributes.
// If it cannot start, every integration test fails with the reason — none is skipped.
import type { TestProject } from 'vitest/node';
import { resolveTemporalCli, startDevServer } from '../../worker/dev-server';
import { sharedOnce } from './shared-setup';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    temporalNamespace: string;
    temporalVersion: string;
    temporalTestServerPath: string;
  }
}

export default async function setup(project: TestProject) {
  const { value, teardown } = await sharedOnce('temporal dev server', async () => {
    const started = Date.now();
    const server = await startDevServer({
      port: 0,
      readyTimeoutMs: Number(process.env.KEEL_TEST_SERVER_TIMEOUT_MS ?? 120_000),
      onLog: process.env.KEEL_TEST_SERVER_LOGS ? (line) => console.error(`[temporal] ${line}`) : undefined,
    });
    console.log(`temporal dev server: ${server.version} on ${server.address}, ready in ${Date.now() - started} ms`);
    const testServerPath = await resolveTemporalCli('test-server-path');
    return { value: { server, testServerPath }, stop: () => server.stop() };
  });
  project.provide('temporalAddress', value.server.address);
  project.provide('temporalNamespace', value.server.namespace);
  project.provide('temporalVersion', value.server.version);
  project.provide('temporalTestServerPath', value.testServerPath);
  return teardown;
}
