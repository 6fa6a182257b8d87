// The long scenario's slope over a session's life (bench/suite/scenarios.ts lifeSlope): CPU
// per step of the last ten turns against the first ten.
import { describe, expect, it } from 'vitest';
import { lifeSlope } from '../../bench/suite/scenarios';

describe('lifeSlope', () => {
  it('compares the CPU per step of the last ten turns with the first ten', () => {
    // 100 turns: 40 ms each for the first 50, then 60 ms each.
    const cpuAt = [0];
    for (let t = 1; t <= 100; t += 1) cpuAt.push(cpuAt[t - 1]! + (t <= 50 ? 40 : 60));
    expect(lifeSlope(cpuAt)).toMatchObject({ firstTurnsCpuMsPerStep: 40, lastTurnsCpuMsPerStep: 60, lifeSlope: 1.5 });
  });

  it('compares the last ten with the second ten too, past a fresh worker\'s warm-up', () => {
    // A first window at 80 ms (the JIT's first work), then 40 ms, then 44 ms at the end.
    const cpuAt = [0];
    for (let t = 1; t <= 30; t += 1) cpuAt.push(cpuAt[t - 1]! + (t <= 10 ? 80 : t <= 20 ? 40 : 44));
    const slope = lifeSlope(cpuAt);
    expect(slope.lifeSlope).toBeCloseTo(0.55);
    expect(slope.secondTurnsCpuMsPerStep).toBe(40);
    expect(slope.warmLifeSlope).toBeCloseTo(1.1);
    expect(lifeSlope(cpuAt.slice(0, 21)).warmLifeSlope).toBeUndefined();
  });

  it('says nothing of a session shorter than two windows', () => {
    expect(lifeSlope(Array.from({ length: 20 }, (_, i) => i * 10))).toEqual({});
  });
});
