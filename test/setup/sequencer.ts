// The order files start in. All projects share one group of forks (vitest.config.ts):
//  1. the unit files, longest first: they need nothing from the integration global setup,
//     whose workflow bundle is still being built while they run (test/setup/workflow-bundle.ts);
//  2. the integration files that take 8 s or more, longest first: a long file that starts
//     last keeps the whole run waiting on it alone;
//  3. the rest, short files that fill the forks at the end.
// Vitest orders files by their last duration when it has a cache; a clean clone (CI) has
// none, so it would order them by size. Durations: each file's mean wall in two clean-clone
// runs of `npm test` with three forks (idle, 2026-11-30, ciS6 and ciS7 in
// bench/results/test-time.md); every integration file of 8 s or more. Re-measure when a
// file's length changes much: a long file that starts late ends the run alone.
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const LONG_FIRST = [
  'test/unit/machines/properties.test.ts', // 17 s
  'test/unit/tools/sandbox-hardening.test.ts', // 17 s
  'test/integration/server-schemathesis.test.ts', // 59 s
  'test/integration/escapes.test.ts', // 59 s
  'test/integration/fleet.test.ts', // 58 s
  'test/integration/workspace-affinity.test.ts', // 48 s
  'test/integration/demo-stops.test.ts', // 45 s
  'test/integration/replay-repair.test.ts', // 43 s
  'test/integration/console-app.test.ts', // 40 s
  'test/integration/cli.test.ts', // 36 s
  'test/integration/console.test.ts', // 35 s
  'test/integration/bench.test.ts', // 32 s
  'test/integration/dev-stops.test.ts', // 32 s
  'test/integration/host-move.test.ts', // 27 s
  'test/integration/demo.test.ts', // 23 s
  'test/integration/goal-fork.test.ts', // 23 s
  'test/integration/goal-control.test.ts', // 23 s
  'test/integration/session-long.test.ts', // 23 s
  'test/integration/tools.test.ts', // 22 s
  'test/integration/temporal-install.test.ts', // 22 s
  'test/integration/stream-readers.test.ts', // 22 s
  'test/integration/store-fleet.test.ts', // 22 s
  'test/integration/schedules.test.ts', // 21 s
  'test/integration/llm-activity.test.ts', // 21 s
  'test/integration/goal.test.ts', // 20 s
  'test/integration/compiled-worker.test.ts', // 20 s
  'test/integration/replay.test.ts', // 18 s
  'test/integration/sse-resume.test.ts', // 17 s
  'test/integration/workers.test.ts', // 17 s
  'test/integration/goal-crash.test.ts', // 16 s
  'test/integration/fuzz.test.ts', // 16 s
  'test/integration/replay-tracing.test.ts', // 16 s
  'test/integration/llm-faults.test.ts', // 15 s
  'test/integration/infra-outage.test.ts', // 14 s
  'test/integration/model-edges.test.ts', // 13 s
  'test/integration/fork-rewind.test.ts', // 12 s
  'test/integration/hostile.test.ts', // 12 s
  'test/integration/server-stream-fuzz.test.ts', // 12 s
  'test/integration/versions.test.ts', // 12 s
  'test/integration/session-crash.test.ts', // 11 s
  'test/integration/mcp.test.ts', // 10 s
  'test/integration/conformance.test.ts', // 10 s
  'test/integration/check-replay.test.ts', // 10 s
  'test/integration/cli-approve-view.test.ts', // 9 s
  'test/integration/server-api.test.ts', // 9 s
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
