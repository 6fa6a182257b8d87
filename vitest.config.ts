import { randomUUID } from 'node:crypto';
import { defineConfig } from 'vitest/config';
import { LongFirstSequencer } from './test/setup/sequencer';

// Test files run two at a time by default (vitest's default on 2 cores is one: cores - 1);
// `npm test` runs three on a machine that is otherwise idle (scripts/test.sh measures it and
// sets KEEL_TEST_WORKERS). The suite is CPU-bound; what a third fork buys depends on what the
// two leave idle. Before the checks were truly niced and the SDK's stack-trace hook left the
// forks (30 Nov 2026), three were 5-14 % faster or slower, for 0-17 % more CPU, and failed a
// timing-bound test in some runs; after, 469 s against 570 s, for less CPU (906 s against 939 s:
// bench/results/test-time.md). Beside other work (`npm run test:stress`: two busy loops on 2
// cores) a third fork only adds contention, so there it stays two.
const workers = Number(process.env.KEEL_TEST_WORKERS ?? 2);

// Every process this run starts carries the run's marker (forks, dev servers, workers,
// stand-ins, PostgreSQL): what a test leaves behind is stopped at the end of its file
// (test/setup/file-scope.ts) or of the run, even a run that was killed
// (test/setup/run-scope.ts). Set here, in the main process, before anything is started.
process.env.KEEL_TEST_RUN ??= randomUUID();
const everyProject = { globalSetup: ['test/setup/run-scope.ts'], setupFiles: ['test/setup/file-scope.ts'] };

// One group for all three projects: a file of any project starts as soon as a fork is free
// (test/setup/sequencer.ts puts the unit files first, then the longest integration files).
// Two groups made the integration files wait for the last unit file: one fork idle while the
// other finished the property tests, then both forks started again.
const group = { groupOrder: 0 };

const integration = {
  sequence: group,
  ...everyProject,
  // run-scope first: global teardowns run in reverse, so its sweep comes after the servers' own stop.
  globalSetup: [...everyProject.globalSetup, 'test/setup/temporal-server.ts', 'test/setup/workflow-bundle.ts', 'test/setup/compiled-cli.ts'],
  // The dev servers start in the background (test/setup/temporal-server.ts): each file waits for them first.
  // The SDK's workflow stack-trace hook is off in the forks (test/setup/workflow-stack-traces.ts says why).
  setupFiles: [...everyProject.setupFiles, 'test/setup/temporal-ready.ts', 'test/setup/workflow-stack-traces.ts'],
  testTimeout: 120_000,
  hookTimeout: 180_000,
};
const isolatedIntegration = ['test/integration/mcp-network.test.ts'];

// `forks`, never `threads`: worker threads crash the Temporal native bridge.
export default defineConfig({
  test: {
    pool: 'forks',
    maxWorkers: workers,
    sequence: { sequencer: LongFirstSequencer },
    // CI also writes a JSON summary, from which .ci/run prints a plain "N passed, N failed".
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: process.env.CI ? { json: '.keel/vitest-results.json' } : undefined,
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          ...everyProject,
          // Projects of one group need the same number of workers.
          maxWorkers: workers,
          // Unit files share their fork's module cache: importing the machines, zod schemas
          // and the SDK again for each of 60 files was most of test:unit's time.
          isolate: false,
          // Five seconds was too tight for the property and process tests on 2 busy cores.
          testTimeout: 20_000,
          sequence: group,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          exclude: isolatedIntegration,
          // Integration files share their fork's modules too: each file imported the SDK,
          // the worker and the machines again (231 s of imports summed over a clean-clone
          // run, on 2 cores). Every file makes its own task queue, worker and workspace.
          isolate: false,
          ...integration,
        },
      },
      {
        extends: true,
        // Files that replace a module (vi.mock) need a module cache of their own.
        test: { name: 'integration-isolated', include: isolatedIntegration, ...integration },
      },
      // End-to-end acceptance runs (every surface, kill -9, many turns, long fuzz): minutes
      // each, so not part of `npm test`; `npm run test:e2e [-- name]` runs them. `npm test`
      // keeps a short check of what each proves.
      ...(process.env.KEEL_E2E
        ? [{ extends: true as const, test: { name: 'e2e', include: ['test/e2e/**/*.test.ts'], isolate: false, ...integration, testTimeout: 900_000 } }]
        : []),
    ],
  },
});
