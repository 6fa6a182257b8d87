// The bench's report (bench/suite/report.ts, bench/suite/harnesses.ts): what a reader of
// bench/results/NAME.md sees — Keel ÷ floor-local first, each figure's min / median / max as
// measured, charts titled with their own scenario's rounds, the harnesses' reports after the
// scenarios'.
import { describe, expect, it } from 'vitest';
import type { Phase } from '../../bench/suite/measure';
import { charts, markdown, summarise } from '../../bench/suite/report';
import { withHarnesses } from '../../bench/suite/harnesses';
import type { VariantName } from '../../bench/suite/variants';

const phase = (scenario: string, variant: VariantName, round: number, workerCpuMs: number, extra: Record<string, number> = {}): Phase => ({
  scenario,
  round,
  variant,
  steps: 10,
  modelCalls: 10,
  wallMs: 1000,
  workerCpuMs,
  serverCpuMs: 100,
  workerRssMiB: 300,
  serverRssMiB: 200,
  loadAverage1m: 1,
  events: { ACTIVITY_TASK_COMPLETED: 10 },
  eventsTotal: 80,
  extra,
});

describe('the bench report', () => {
  it('leads each scenario with Keel ÷ floor-local and shows a slope of 0.72 / 1 / 1.14 as measured', () => {
    const phases = [1, 2, 3].flatMap((round) => [
      phase('long', 'floor', round, 200),
      phase('long', 'floor-local', round, 100),
      phase('long', 'keel', round, 150, { lifeSlope: [0.72, 1, 1.14][round - 1]! }),
    ]);
    const md = markdown('Benchmark: t', { run: 'test' }, summarise(phases), []);
    const section = md.slice(md.indexOf('## long'));
    // worker+server per step: floor (200+100)/10 = 30, floor-local 20, Keel 25 → 0.8333 ÷ 0.6667.
    expect(section.split('\n')[2]).toBe('keel ÷ floor-local, from the medians of their ratios to the floor: **1.25** worker+server CPU per step (keel 0.83, floor-local 0.67).');
    expect(section).toContain('| keel | 0.7200 / **1.0000** / 1.1400 |');
    // Worker and server RSS are columns of the main table.
    expect(section).toMatch(/\| 300 \/ \*\*300\*\* \/ 300 \| 200 \/ \*\*200\*\* \/ 200 \|/);
  });

  it("titles each chart with its own scenario's rounds", () => {
    const phases = [
      ...[1, 2, 3].flatMap((round) => [phase('single', 'floor', round, 200), phase('single', 'keel', round, 150)]),
      phase('parked', 'floor', 1, 200),
      phase('parked', 'keel', 1, 150),
    ];
    const titles = new Map(charts(summarise(phases)).map(([scenario, svg]) => [scenario, /ratio to the floor[^<]*/.exec(svg)?.[0]]));
    expect(titles.get('single')).toContain('over 3 rounds');
    expect(titles.get('parked')).toContain('over 1 round)');
  });

  it("puts the harnesses' reports after the scenarios', their titles as subheadings, and says why one is missing", () => {
    const suite = '# Benchmark: t\n\n## single\n\n';
    expect(withHarnesses(suite, [])).toBe(suite);
    const md = withHarnesses(suite, [
      { name: 'fork', file: 't-fork', seconds: 12, ok: true, markdown: '# Fork\n\nready 174 ms\n' },
      { name: 'sub-agents', file: 't-sub-agents', seconds: 3, ok: false, failure: 'exit 1' },
    ]);
    expect(md.startsWith('# Benchmark: t\n\n## single\n\n## Scenario `fork`')).toBe(true);
    expect(md).toContain('### Fork\n\nready 174 ms');
    expect(md).toContain('## Scenario `sub-agents`');
    expect(md).toContain('**Did not finish**: exit 1.');
  });
});
