// The cost bench's compaction and overshoot yardsticks (bench/suite/compaction-cost.ts,
// bench/suite/budget-overshoot.ts): the old way's summary request rebuilt from a recorded
// one, and the overshoot of a session against the input estimate's error.
import { describe, expect, it } from 'vitest';
import { summaryRequest, SUMMARY_SYSTEM_PROMPT } from '../../activities/conversation-compaction';
import { withPromptCaching } from '../../activities/llm-cache';
import { inputUnderestimates, overshoot } from '../../bench/suite/budget-overshoot';
import { compactionCost, isSummaryRequest, oldSummaryRequest } from '../../bench/suite/compaction-cost';
import type { BilledRequest } from '../../bench/suite/cost';

const MODEL = 'claude-sonnet-4-6';
const usage = (input: number, read: number, output = 20) => ({ input_tokens: input, output_tokens: output, cache_creation_input_tokens: 0, cache_read_input_tokens: read });
const conversation = [
  { role: 'user' as const, content: 'first question' },
  { role: 'assistant' as const, content: [{ type: 'text' as const, text: 'x'.repeat(8_000) }] },
  { role: 'user' as const, content: 'second question' },
  { role: 'assistant' as const, content: [{ type: 'text' as const, text: 'second answer' }] },
  { role: 'user' as const, content: 'third question' },
];

describe('the compaction yardstick', () => {
  const body = { model: MODEL, max_tokens: 4_096, stream: true as const, system: [{ type: 'text' as const, text: 'be brief' }], messages: withPromptCaching({ messages: conversation }).messages };
  const summary: BilledRequest = { body: summaryRequest(body, 2) as unknown as Record<string, unknown>, usage: usage(40, 2_000) };

  it('rebuilds the old request: its own system prompt, the messages before the cut as text, nothing cached', () => {
    expect(isSummaryRequest(summary)).toBe(true);
    expect(isSummaryRequest({ body: body, usage: usage(10, 0) })).toBe(false);
    const old = oldSummaryRequest(summary);
    expect(old.body.system).toBe(SUMMARY_SYSTEM_PROMPT);
    const [message] = old.body.messages as Array<{ content: string }>;
    expect(message!.content).toContain('first question');
    expect(message!.content).not.toContain('second question');
    expect(old.usage.cache_read_input_tokens).toBe(0);
    expect(old.usage.input_tokens).toBeGreaterThan(2_000);
    expect(old.usage.output_tokens).toBe(20);
  });

  it('prices the session both ways: only the summaries differ', () => {
    const turn: BilledRequest = { body: body, usage: usage(30, 2_100) };
    const c = compactionCost(MODEL, 3, [turn, summary, turn]);
    expect(c.compactions).toBe(1);
    expect(c.summaries.usd).toBeLessThan(c.oldSummaries.usd / 3);
    expect(c.oldSession.usd - c.session.usd).toBeCloseTo(c.oldSummaries.usd - c.summaries.usd, 12);
  });
});

describe('the overshoot yardstick', () => {
  const first = { body: { model: MODEL, messages: [{ role: 'user', content: 'hello there' }] }, usage: usage(10, 0) };
  const second = { body: { model: MODEL, messages: [{ role: 'user', content: 'hello there' }, { role: 'assistant', content: 'hi' }, { role: 'user', content: 'y'.repeat(400) }] }, usage: usage(150, 0) };

  it('is the input billed beyond the last count plus what was appended at 4 characters a token', () => {
    const [a, b] = inputUnderestimates([first, second]);
    expect(a).toBe(0);
    // 10 counted, plus the answer and the new message at 4 characters a token; 150 billed.
    expect(b).toBe(150 - 10 - Math.ceil(JSON.stringify(second.body.messages.slice(1)).length / 4));
    expect(b).toBeGreaterThan(0);
  });

  it('reports the overshoot against that bound, per limit kind', () => {
    const input = overshoot(MODEL, 'inputTokens', 150, [first, second]);
    expect(input).toMatchObject({ spent: 160, requests: 2 });
    expect(input.overshoot).toBeCloseTo(10 / 150, 9);
    expect(input.within).toBe(true);
    const output = overshoot(MODEL, 'outputTokens', 30, [first, second]);
    expect(output).toMatchObject({ spent: 40, bound: 0, within: false });
  });
});
