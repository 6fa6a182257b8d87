import { defineConfig } from 'vitest/config';

// `forks`, never `threads`: worker threads crash the Temporal native bridge.
export default defineConfig({
  test: {
    pool: 'forks',
    // CI also writes a JSON summary, from which .ci/run prints a plain "N passed, N failed".
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: process.env.CI ? { json: '.keel/vitest-results.json' } : undefined,
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/setup/temporal-server.ts', 'test/setup/workflow-bundle.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
