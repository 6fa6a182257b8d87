// The short version of `npm run bench` (bench/suite.ts): Keel against the floor (a bare
// Temporal workflow doing the same model and tool activities) on its own dev server, in
// interleaved rounds. It fails only on a gross regression of a ratio to the floor measured
// in the same round — never on a time, since CI machines are shared and loaded.
import { describe, expect, inject, it } from 'vitest';
import { runBench } from '../../bench/suite/run';
import { QUICK } from '../../bench/suite/scenarios';
import { keelWorkflowBundleFile } from '../helpers/temporal';

/**
 * Measured on 2026-11-27 at these sizes (one 4-step turn; 4 sessions × one 3-step turn), 3
 * rounds, quiet machine: Keel's worker+server CPU per step 1.25–1.68× the floor's (median
 * 1.64 single, 1.38 concurrent), and 20–22 history events per step (per-turn events weigh
 * more on short turns than in `npm run bench`'s 15–16). The limits catch a doubling of the
 * CPU ratio, and half as many events again; CPU varies with load, events hardly do. They
 * were 4× and 45 events before issue 31 brought Keel down from ~2× and ~30.
 */
const MAX_TOTAL_CPU_RATIO = 3;
const MAX_EVENTS_PER_STEP = 30;

describe('bench (short)', () => {
  it('Keel costs at most 3× the floor per step and writes at most 30 history events per step', async () => {
    const run = await runBench({
      scenarios: ['single', 'concurrent'],
      variants: ['floor', 'keel'],
      rounds: 3,
      sizes: { ...QUICK, singleSteps: 4, singleTurns: 1, sessions: 4, turns: 1, steps: 3 },
      // The keel worker polls on the test run's one bundle (test/setup/workflow-bundle.ts)
      // instead of bundling the workflows again before the first round.
      ...(inject('workflowBundleDir') ? { keelWorkflowBundle: await keelWorkflowBundleFile() } : {}),
    });
    expect(run.notes).toEqual([]);
    for (const scenario of ['single', 'concurrent']) {
      const rows = run.summary[scenario]!;
      const keel = rows.find((r) => r.variant === 'keel')!;
      const floor = rows.find((r) => r.variant === 'floor')!;
      console.log(`bench (short) ${scenario}: Keel CPU/step ÷ floor ${JSON.stringify(keel.ratios.totalCpuPerStep)}, events/step ${JSON.stringify(keel.figures.eventsPerStep)}`);
      // The instrument measured something: CPU was spent and the floor wrote its events.
      expect(floor.figures.totalCpuPerStep.median).toBeGreaterThan(0);
      expect(floor.figures.eventsPerStep.median).toBeGreaterThan(6);
      expect(keel.rounds).toBe(3);
      expect(keel.ratios.totalCpuPerStep!.median, `${scenario}: Keel worker+server CPU per step / floor`).toBeLessThanOrEqual(MAX_TOTAL_CPU_RATIO);
      expect(keel.figures.eventsPerStep.median, `${scenario}: Keel history events per step`).toBeLessThanOrEqual(MAX_EVENTS_PER_STEP);
    }
  }, 300_000);
});
