// The bench's scenarios as the docs and its usage line name them: a scenario dropped from the
// suite's lists (bench/suite/scenarios.ts SCENARIOS, bench/suite/harnesses.ts HARNESS_NAMES) while docs/performance.md still tells how to
// run it is a command a reader cannot run (first-delta was, for a stop, after a merge).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { HARNESS_NAMES } from '../../bench/suite/harnesses';
import { SCENARIOS } from '../../bench/suite/scenarios';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const read = (file: string) => fs.readFileSync(path.join(root, file), 'utf8');
// The suite's own scenarios, then those with a harness of their own (bench/suite/harnesses.ts), run after them.
const ALL = [...SCENARIOS, ...HARNESS_NAMES];

describe('bench scenarios', () => {
  it("docs/performance.md's scenario table lists every scenario `npm run bench` runs, and no other", () => {
    // The table under its header, to the first line that is not a row (other tables name variants the same way).
    const lines = read('docs/performance.md').split('\n');
    const header = lines.findIndex((line) => line.startsWith('| scenario | what |'));
    expect(header).toBeGreaterThan(0);
    const end = lines.findIndex((line, i) => i > header && !line.startsWith('|'));
    const table = lines.slice(header + 2, end).filter((line) => /^\| `[a-z-]+` \| /.test(line));
    expect(table.map((line) => /^\| `([a-z-]+)`/.exec(line)![1])).toEqual(ALL);
  });

  it("bench/suite.ts's usage line names the same scenarios", () => {
    const usage = /--scenario ([a-z,-]+)\]/.exec(read('bench/suite.ts'))?.[1];
    expect(usage?.split(',')).toEqual(ALL);
  });
});
