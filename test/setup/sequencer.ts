// Test files that take a minute or more start first: with 4 files at a time, a long file
// that starts last keeps the whole run waiting on it alone (schemathesis alone is ~4 min).
// Vitest orders files by their last duration when it has a cache; a clean clone (CI) has
// none, so it would order them by size. Measured in CI runs, longest first.
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const LONG_FIRST = [
  'test/integration/server-schemathesis.test.ts',
  'test/integration/chaos.test.ts',
  'test/integration/demo-stops.test.ts',
  'test/integration/server-stream-fuzz.test.ts',
  'test/integration/console-app.test.ts',
  'test/integration/bench.test.ts',
  'test/integration/fuzz.test.ts',
  'test/integration/session-long.test.ts',
  'test/integration/failover.test.ts',
  'test/integration/cli.test.ts',
  'test/integration/cli-approve-view.test.ts',
  'test/integration/sse-resume.test.ts',
  'test/integration/console.test.ts',
  'test/integration/escapes.test.ts',
];

function rank(spec: TestSpecification): number {
  const at = LONG_FIRST.findIndex((file) => spec.moduleId.endsWith(file));
  return at < 0 ? LONG_FIRST.length : at;
}

export class LongFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    // Stable: the groups (unit, then integration) and the base order stay; long files move up in each.
    const group = (spec: TestSpecification) => spec.project.config.sequence.groupOrder;
    return sorted
      .map((spec, index) => ({ spec, index }))
      .sort((a, b) => group(a.spec) - group(b.spec) || rank(a.spec) - rank(b.spec) || a.index - b.index)
      .map(({ spec }) => spec);
  }
}
