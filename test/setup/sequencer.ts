// The order files start in. All projects share one group of forks (vitest.config.ts):
//  1. the unit files, longest first: they need nothing from the integration global setup,
//     whose workflow bundle is still being built while they run (test/setup/workflow-bundle.ts);
//  2. the integration files that take ~20 s or more, longest first: a long file that starts
//     last keeps the whole run waiting on it alone;
//  3. the rest, short files that fill the forks at the end.
// Vitest orders files by their last duration when it has a cache; a clean clone (CI) has
// none, so it would order them by size. Durations measured in CI runs.
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const LONG_FIRST = [
  'test/unit/machines/properties.test.ts',
  'test/integration/server-schemathesis.test.ts',
  'test/integration/chaos.test.ts',
  'test/integration/demo-stops.test.ts',
  'test/integration/server-stream-fuzz.test.ts',
  'test/integration/console-app.test.ts',
  // 60 s since main's merge of 2026-11-27 (5.6 s before): it started last and was the run's tail.
  'test/integration/session-evicted.test.ts',
  'test/integration/bench.test.ts',
  'test/integration/fuzz.test.ts',
  'test/integration/session-long.test.ts',
  'test/integration/failover.test.ts',
  'test/integration/cli.test.ts',
  'test/integration/cli-approve-view.test.ts',
  'test/integration/sse-resume.test.ts',
  'test/integration/console.test.ts',
  'test/integration/escapes.test.ts',
  'test/integration/workspace-affinity.test.ts',
  'test/integration/demo.test.ts',
  'test/integration/goal.test.ts',
  'test/integration/dev-stops.test.ts',
  'test/integration/tools.test.ts',
  'test/integration/workers.test.ts',
  'test/integration/hostile.test.ts',
  'test/integration/store-fleet.test.ts',
  'test/integration/goal-crash.test.ts',
  // Its own project (a fresh fork): not alone at the very end, where it was the run's last 5 s.
  'test/integration/mcp-network.test.ts',
];

function rank(spec: TestSpecification): number {
  const at = LONG_FIRST.findIndex((file) => spec.moduleId.endsWith(file));
  return at < 0 ? LONG_FIRST.length : at;
}

/** Unit files before integration files. */
const phase = (spec: TestSpecification) => (spec.project.name === 'unit' ? 0 : 1);

export class LongFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    // Stable: within each phase, long files move up and the base order stays for the rest.
    return sorted
      .map((spec, index) => ({ spec, index }))
      .sort((a, b) => phase(a.spec) - phase(b.spec) || rank(a.spec) - rank(b.spec) || a.index - b.index)
      .map(({ spec }) => spec);
  }
}
