import { describe, expect, it } from 'vitest';
import { NO_LIMITS, ZERO_USAGE, type Usage } from '../../../machines/budget';
import { agentShare, shareSlots } from '../../../machines/budget-share';

const limits = { ...NO_LIMITS, outputTokens: 20_000, costUsd: 1 };
const used = (outputTokens: number, costUsd = 0): Usage => ({ ...ZERO_USAGE, outputTokens, costUsd });

describe('agent shares of a goal budget', () => {
  it('agents started together split what is free evenly; the last free slot gets the rest', () => {
    const first = agentShare(limits, used(1_001), [], 2);
    expect(first).toEqual({ inputTokens: null, outputTokens: 9_499, costUsd: 0.5 });
    const second = agentShare(limits, used(1_001), [{ share: { ...first, maxSteps: null }, used: ZERO_USAGE }], 1);
    expect(second).toEqual({ inputTokens: null, outputTokens: 9_500, costUsd: 0.5 });
    // Together they cannot cross the goal's limit.
    expect(1_001 + first.outputTokens! + second.outputTokens!).toBe(20_000);
  });

  it('what a running agent has reported is counted once: in the goal usage, not in what it holds', () => {
    const running = [{ share: { inputTokens: null, outputTokens: 10_000, costUsd: 0.5, maxSteps: null }, used: used(4_000, 0.2) }];
    // Goal usage includes the 4 000 reported; the running agent still holds 6 000.
    expect(agentShare(limits, used(5_000, 0.2), running, 1)).toEqual({ inputTokens: null, outputTokens: 9_000, costUsd: 0.5 });
  });

  it('nothing free is a share of zero, never negative; no limit is no limit', () => {
    const running = [{ share: { inputTokens: null, outputTokens: 20_000, costUsd: 1, maxSteps: null }, used: ZERO_USAGE }];
    expect(agentShare(limits, ZERO_USAGE, running, 1)).toEqual({ inputTokens: null, outputTokens: 0, costUsd: 0 });
    expect(agentShare(NO_LIMITS, used(5), [], 3)).toEqual({ inputTokens: null, outputTokens: null, costUsd: null });
  });

  it('is split over the free slots, or over the tasks left to start when fewer: a lone task gets it all', () => {
    const tasks = (...statuses: string[]) => statuses.map((status, i) => ({ id: `t${i}`, status }));
    expect(shareSlots(tasks('running'), new Set(), 3)).toBe(1);
    expect(shareSlots(tasks('running', 'running', 'pending', 'succeeded'), new Set(), 2)).toBe(2);
    expect(shareSlots(tasks('running', 'running', 'pending'), new Set(['t0']), 2)).toBe(1);
    expect(shareSlots(tasks('running', 'failed', 'cancelled'), new Set(), 4)).toBe(1);
  });
});
