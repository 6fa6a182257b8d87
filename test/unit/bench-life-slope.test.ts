// The long scenario's slope over a session's life (bench/suite/scenarios.ts lifeSlope): CPU
// per step of the last ten turns against the first ten.
import { describe, expect, it } from 'vitest';
import { lifeSlope } from '../../bench/suite/scenarios';

describe('lifeSlope', () => {
  it('compares the CPU per step of the last ten turns with the first ten', () => {
    // 100 turns: 40 ms each for the first 50, then 60 ms each.
    const cpuAt = [0];
    for (let t = 1; t <= 100; t += 1) cpuAt.push(cpuAt[t - 1]! + (t <= 50 ? 40 : 60));
    expect(lifeSlope(cpuAt)).toEqual({ firstTurnsCpuMsPerStep: 40, lastTurnsCpuMsPerStep: 60, lifeSlope: 1.5 });
  });

  it('says nothing of a session shorter than two windows', () => {
    expect(lifeSlope(Array.from({ length: 20 }, (_, i) => i * 10))).toEqual({});
  });
});
