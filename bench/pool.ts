// Pools the rounds of several bench runs: `npx tsx bench/pool.ts [--scenario single] [--variant keel] [--baseline floor] RUN.json...`.
// One session's ratio moves by ±0.1 between runs of 3 rounds on this machine (30 steps a
// round); pooled over A/B pairs of runs (docs/performance.md, Method) it settles. Prints, for
// each file group given as `label=a.json,b.json`, the variant's ratios to the baseline (the floor,
// or e.g. `floor-local`) of the same round: worker+server, worker and server CPU per step, median and quartiles over every round.
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import type { Phase } from './suite/measure';
import { percentile, spread } from './suite/stats';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { scenario: { type: 'string', default: 'single' }, variant: { type: 'string', default: 'keel' }, baseline: { type: 'string', default: 'floor' } },
});
if (positionals.length === 0) throw new Error('usage: npx tsx bench/pool.ts [--scenario S] [--variant V] [--baseline B] label=run1.json,run2.json ...');

const perStep = (p: Phase, what: 'both' | 'worker' | 'server') =>
  (what === 'worker' ? p.workerCpuMs : what === 'server' ? p.serverCpuMs : p.workerCpuMs + p.serverCpuMs) / p.steps;

for (const group of positionals) {
  const [label, list] = group.includes('=') ? (group.split('=', 2) as [string, string]) : [group, group];
  const ratios = { both: [] as number[], worker: [] as number[], server: [] as number[] };
  for (const file of list.split(',')) {
    const phases = (JSON.parse(fs.readFileSync(file, 'utf8')) as { phases: Phase[] }).phases.filter((p) => p.scenario === values.scenario);
    for (const round of new Set(phases.map((p) => p.round))) {
      const base = phases.find((p) => p.round === round && p.variant === values.baseline);
      const it = phases.find((p) => p.round === round && p.variant === values.variant);
      if (!base || !it) continue;
      for (const what of ['both', 'worker', 'server'] as const) ratios[what].push(perStep(it, what) / perStep(base, what));
    }
  }
  if (ratios.both.length === 0) throw new Error(`${label}: no round of ${values.scenario} has both ${values.variant} and ${values.baseline} (--variant, --baseline)`);
  const line = (['both', 'worker', 'server'] as const).map((what) => {
    const r = ratios[what];
    return `${what === 'both' ? 'worker+server' : what} ${spread(r).median.toFixed(2)}× (quartiles ${percentile(r, 25).toFixed(2)}–${percentile(r, 75).toFixed(2)})`;
  });
  console.log(`${label}: ${values.variant} ÷ ${values.baseline} in ${values.scenario}, ${ratios.both.length} rounds: ${line.join(', ')}`);
}
