// The pre-call ceiling: a call's worst case fitted to what the turn may still spend.
import { describe, expect, it } from 'vitest';
import { callBudgetOf, fitCall } from '../../../machines/call-ceiling';

const sonnet = { inputTokens: 10_000, inputUsd: 10_000 * 3.75e-6, outputUsdPerToken: 15e-6, maxTokens: 8_192, minMaxTokens: 1 };

describe('call ceiling', () => {
  it('lowers max_tokens to the output budget left', () => {
    expect(fitCall({ inputTokens: null, outputTokens: 904, costUsd: null }, sonnet)).toEqual({ fits: true, maxTokens: 904 });
  });

  it('lowers max_tokens to what the USD budget leaves after the input written in full', () => {
    // $0.05 − $0.0375 of input leaves $0.0125: 833 output tokens at $15 / MTok.
    expect(fitCall({ inputTokens: null, outputTokens: null, costUsd: 0.05 }, sonnet)).toEqual({ fits: true, maxTokens: 833 });
  });

  it('refuses a call whose input alone could cross a limit, with the figures', () => {
    expect(fitCall({ inputTokens: 9_000, outputTokens: null, costUsd: null }, sonnet)).toEqual({ fits: false, limit: 'input_tokens', left: 9_000, needed: 10_000 });
    const cost = fitCall({ inputTokens: null, outputTokens: null, costUsd: 0.03 }, sonnet);
    expect(cost).toMatchObject({ fits: false, limit: 'cost_usd', left: 0.03 });
    expect(cost.fits === false && cost.needed).toBeCloseTo(0.0375 + 15e-6, 12);
  });

  it('refuses manual thinking that no longer fits its minimum budget', () => {
    expect(fitCall({ inputTokens: null, outputTokens: 1_000, costUsd: null }, { ...sonnet, minMaxTokens: 1_025 })).toEqual({ fits: false, limit: 'output_tokens', left: 1_000, needed: 1_025 });
  });

  it('leaves a call alone when the turn has no token or cost limit', () => {
    expect(callBudgetOf({ inputTokens: null, outputTokens: null, costUsd: null, maxSteps: 5 }, { inputTokens: 1, outputTokens: 1, costUsd: 1, unpricedCalls: 0 })).toBeNull();
    expect(callBudgetOf({ inputTokens: null, outputTokens: 100, costUsd: 1, maxSteps: null }, { inputTokens: 1, outputTokens: 40, costUsd: 0.25, unpricedCalls: 0 })).toEqual({ inputTokens: null, outputTokens: 60, costUsd: 0.75 });
  });
});
