// Cost from the price table: cache writes and reads priced apart, unknown models unknown.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { costOf, DEFAULT_PRICES, loadPriceTable, priceOf } from '../../activities/llm-pricing';
import { tempDir } from '../fixtures/temp-dir';

describe('model pricing', () => {
  it('prices input, output, cache writes and cache reads at their own rates', () => {
    const cost = costOf(
      'claude-sonnet-4-6',
      {
        input_tokens: 1_000_000,
        output_tokens: 100_000,
        cache_creation_input_tokens: 300_000,
        cache_read_input_tokens: 2_000_000,
        cache_creation: { ephemeral_5m_input_tokens: 200_000, ephemeral_1h_input_tokens: 100_000 },
      },
      DEFAULT_PRICES,
    );
    expect(cost).not.toBeNull();
    expect(cost!.input).toBeCloseTo(3, 10);
    expect(cost!.output).toBeCloseTo(1.5, 10);
    expect(cost!.cacheWrite).toBeCloseTo(0.2 * 3.75 + 0.1 * 6, 10);
    expect(cost!.cacheRead).toBeCloseTo(0.6, 10);
    expect(cost!.total).toBeCloseTo(3 + 1.5 + 1.35 + 0.6, 10);
  });

  it('bills cache writes at the 5-minute rate when usage has no split', () => {
    const cost = costOf('claude-haiku-4-5', { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 1_000_000 }, DEFAULT_PRICES);
    expect(cost!.cacheWrite).toBeCloseTo(1.25, 10);
  });

  it('knows dated snapshot ids by their alias, and nothing else', () => {
    expect(priceOf('claude-opus-4-5-20251101', DEFAULT_PRICES)).toBe(DEFAULT_PRICES['claude-opus-4-5']);
    // A newer model is not priced like an older one that shares a prefix: unknown.
    expect(priceOf('claude-opus-4-5-turbo', DEFAULT_PRICES)).toBeNull();
    expect(costOf('claude-someday-9', { input_tokens: 10, output_tokens: 10 }, DEFAULT_PRICES)).toBeNull();
  });

  it('extends and overrides the table from KEEL_MODEL_PRICES, and rejects a bad one', () => {
    const dir = tempDir('prices-');
    const file = path.join(dir, 'prices.yaml');
    writeFileSync(file, 'claude-someday-9: { input: 2, output: 8 }\nclaude-haiku-4-5: { input: 0.5, output: 2.5 }\n');
    const table = loadPriceTable({ KEEL_MODEL_PRICES: file });
    expect(costOf('claude-someday-9', { input_tokens: 1_000_000, output_tokens: 0, cache_read_input_tokens: 1_000_000 }, table)?.total).toBeCloseTo(2.2, 10);
    expect(priceOf('claude-haiku-4-5', table)).toEqual({ input: 0.5, output: 2.5 });
    expect(priceOf('claude-opus-4-6', table)).toBe(DEFAULT_PRICES['claude-opus-4-6']);

    writeFileSync(file, 'claude-someday-9: { input: cheap }\n');
    expect(() => loadPriceTable({ KEEL_MODEL_PRICES: file })).toThrow(/KEEL_MODEL_PRICES=.*not a price table/s);
  });

  it('prices web searches at $10 per 1 000 (or the table\'s webSearchPer1k)', () => {
    const usage = { input_tokens: 1_000, output_tokens: 100, server_tool_use: { web_search_requests: 3 } };
    const cost = costOf('claude-sonnet-4-6', usage, DEFAULT_PRICES)!;
    expect(cost.serverTools).toBeCloseTo(0.03, 12);
    expect(cost.total).toBeCloseTo(0.003 + 0.0015 + 0.03, 12);
    const cheap = { ...DEFAULT_PRICES, 'claude-sonnet-4-6': { input: 3, output: 15, webSearchPer1k: 5 } };
    expect(costOf('claude-sonnet-4-6', usage, cheap)!.serverTools).toBeCloseTo(0.015, 12);
  });
});
