// The short version of `npm run bench` (bench/suite.ts): Keel against the floor (a bare
// Temporal workflow doing the same model and tool activities) on its own dev server, in
// interleaved rounds. It fails only on a gross regression of a ratio to the floor measured
// in the same round — never on a time, since CI machines are shared and loaded.
import { describe, expect, inject, it } from 'vitest';
import { runBench } from '../../bench/suite/run';
import { QUICK } from '../../bench/suite/scenarios';
import { keelWorkflowBundleFile } from '../helpers/temporal';

/**
 * Measured on 2026-11-28 at these sizes (one 4-step turn; 4 sessions × one 3-step turn), 3
 * rounds, in `npm test`: Keel's worker+server CPU per step 1.17–1.29× the floor's (median
 * 1.26 single, 1.27 concurrent), and 14.8 / 15.2 history events per step (a session's own
 * events, its start and close, weigh more on one short turn than in `npm run bench`'s
 * 12.6–14). The limits catch a doubling of the CPU ratio, and half as many events again
 * (one stream signal and its workflow task per model call is 4 events: it would show). CPU
 * varies with load, events hardly do. They were 3× and 30 events before this round of issue
 * 31 (1.64× and 20–22 then), and 4× and 45 before it began.
 */
const MAX_TOTAL_CPU_RATIO = 2.5;
const MAX_EVENTS_PER_STEP = 22;

/**
 * The long session (issue 53: flat over a session's life): one session of LONG_TURNS turns, each
 * reading a different LONG_OUTPUT_BYTES file and answering (two steps a turn), so its last
 * calls carry ~1.2 MB of conversation. `warmLifeSlope` is CPU per step in the last ten turns ÷
 * turns 11–20 (the first ten carry a fresh worker's JIT warm-up; bench/suite/scenarios.ts
 * `lifeSlope`); the check takes Keel's against the floor's of the same round, median of three.
 * Measured on 2026-12-01, idle: Keel 0.92–1.21 and the floor 1.03–1.08 a round, Keel ÷ floor
 * 0.88–1.17 (median 1.00); beside two busy loops 1.16–1.35 (median 1.19); in a whole `npm test`
 * on a fresh clone 1.08–1.44 (median 1.13), and in a whole `npm run test:stress` 1.32–1.68
 * (median 1.38: Keel's late turns slow more than the floor's on a starved machine). Hence 2,
 * not less. Planted, a per-call cost in proportion to the conversation — forty JSON round trips
 * of the messages in the model activity, ~130 ms per MB of conversation at each call, ~20× what
 * building and sending the request costs per MB today — failed it: 2.31–2.89, median 2.44
 * (fifteen, ~50 ms per MB, gave 1.70: caught by a limit of 1.5, which a loaded CI could reach).
 * Thirty turns would not do: their windows' conversations differ by 5 : 3 at most, so no cost in
 * proportion to the conversation could take the ratio far from 1.
 */
const LONG_TURNS = 60;
const LONG_OUTPUT_BYTES = 20_000;
const MAX_SLOPE_RATIO = 2;

describe('bench (short)', () => {
  it('Keel costs at most 2.5× the floor per step, writes at most 22 history events per step, and a long session grows at most 2× the floor\'s slope', async () => {
    const run = await runBench({
      scenarios: ['single', 'concurrent', 'long'],
      variants: ['floor', 'keel'],
      rounds: 3,
      sizes: { ...QUICK, singleSteps: 4, singleTurns: 1, sessions: 4, turns: 1, steps: 3, longTurns: LONG_TURNS, longCanEvery: null, longOutputBytes: LONG_OUTPUT_BYTES },
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
    // The slope of each round's Keel session against the floor's session of the same round.
    const slopes = (variant: string) => run.phases.filter((p) => p.scenario === 'long' && p.variant === variant).sort((a, b) => a.round - b.round).map((p) => p.extra.warmLifeSlope);
    const keelSlopes = slopes('keel');
    const floorSlopes = slopes('floor');
    const ratios = keelSlopes.map((k, i) => k! / floorSlopes[i]!);
    console.log(`bench (short) long: warmLifeSlope Keel ${JSON.stringify(keelSlopes)}, floor ${JSON.stringify(floorSlopes)}, Keel ÷ floor ${JSON.stringify(ratios)}`);
    // Every round's session ran its turns and both windows were measured.
    expect(keelSlopes).toHaveLength(3);
    expect(floorSlopes).toHaveLength(3);
    for (const slope of [...keelSlopes, ...floorSlopes]) expect(slope).toBeGreaterThan(0);
    const median = [...ratios].sort((a, b) => a - b)[1]!;
    expect(median, 'long: Keel warmLifeSlope / floor warmLifeSlope (median of 3 rounds)').toBeLessThanOrEqual(MAX_SLOPE_RATIO);
  }, 480_000);
});
