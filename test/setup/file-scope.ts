// Runs before every test file (vitest `setupFiles`): marks the processes this file starts
// (KEEL_TEST_FILE in the environment every child inherits) and, after the file's own
// `afterAll` hooks, stops any of them still running. A test or hook that timed out before it
// held the handle of what it started — a stand-in, a worker process, a CLI, PostgreSQL —
// leaves nothing behind past its file. What is found is reported: it is a leak to fix. Then
// the temp directories the file made (test/fixtures/temp-dir.ts) go, nothing using them now.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import { removeTempDirs } from '../fixtures/temp-dir';
import { sweepMarked } from './processes';

const MARKER = 'KEEL_TEST_FILE';

let scope: string | undefined;

beforeAll(() => {
  scope = randomUUID();
  process.env[MARKER] = scope;
});

// Registered first, so it runs after the file's own afterAll hooks (vitest runs after-hooks
// in reverse order of registration).
afterAll(async () => {
  if (scope === undefined) return;
  const left = await sweepMarked(MARKER, scope);
  delete process.env[MARKER];
  for (const { pid, command } of left) console.warn(`[keel test] stopped pid ${pid} left running by this file: ${command.slice(0, 200)}`);
  await removeTempDirs();
}, 30_000);
