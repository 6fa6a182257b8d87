// The run's Temporal dev servers (test/setup/temporal-server.ts), as an integration file sees
// them: test/setup/temporal-ready.ts waits for them before the file's first line, so the
// accessors here are synchronous.
import { readFile } from 'node:fs/promises';
import { inject } from 'vitest';
import { waitForFile } from './wait-for-file';

export interface TemporalServers {
  /** One per test fork; a fork uses `addresses[(VITEST_POOL_ID - 1) % length]`. */
  addresses: string[];
  namespace: string;
  version: string;
  /** The time-skipping test server's binary. */
  testServerPath: string;
}

const slot = globalThis as typeof globalThis & { __keelTemporalServers?: TemporalServers };

/** Waits until the run's servers are up (fails with their error if they could not start). */
export async function awaitTemporalServers(timeoutMs = Number(process.env.KEEL_TEST_SERVER_TIMEOUT_MS ?? 120_000) + 120_000): Promise<TemporalServers> {
  if (slot.__keelTemporalServers) return slot.__keelTemporalServers;
  const file = await waitForFile(inject('temporalServersDir'), 'servers.json', timeoutMs, "the run's Temporal dev servers");
  slot.__keelTemporalServers = JSON.parse(await readFile(file, 'utf8')) as TemporalServers;
  return slot.__keelTemporalServers;
}

/** The run's servers; only after test/setup/temporal-ready.ts (an integration or e2e file). */
export function temporalServers(): TemporalServers {
  const servers = slot.__keelTemporalServers;
  if (!servers) throw new Error("the run's Temporal dev servers are not known in this file: test/setup/temporal-ready.ts is not among its project's setupFiles");
  return servers;
}
