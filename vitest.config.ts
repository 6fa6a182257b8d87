import { defineConfig } from 'vitest/config';
import { LongFirstSequencer } from './test/setup/sequencer';

// Test files run side by side: most of an integration test's time is spent waiting on the
// Temporal server, a worker or a child process, not on a CPU. Vitest's default on a 2-core
// machine is one file at a time (cores - 1), which made `npm test` a 20-minute serial run.
// KEEL_TEST_WORKERS (or vitest's own --maxWorkers) changes it.
const workers = Number(process.env.KEEL_TEST_WORKERS ?? 4);

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
          // Unit files are CPU work (imports, property runs): no more of them than cores. Five
          // seconds was too tight for the property and process tests beside integration files.
          maxWorkers: Math.min(workers, 2),
          testTimeout: 20_000,
          // Different worker counts need their own group: the unit files run first.
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          sequence: { groupOrder: 1 },
          globalSetup: ['test/setup/temporal-server.ts', 'test/setup/workflow-bundle.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
