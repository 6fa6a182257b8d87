// The pieces around the SDK call: cache breakpoints, merged deltas, the message
// accumulator and the SDK timeout derived from start-to-close.
import type Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it, vi } from 'vitest';
import { MessageAccumulator } from '../../activities/llm-accumulate';
import { withPromptCaching } from '../../activities/llm-cache';
import { DeltaPublisher, type ModelStreamEvent } from '../../activities/llm-deltas';
import { sdkTimeoutMs } from '../../activities/llm';

describe('prompt caching', () => {
  const tool = (name: string): Anthropic.Tool => ({ name, input_schema: { type: 'object' } });

  it('puts a breakpoint on the system prompt and on the last tool', () => {
    expect(withPromptCaching({ system: 'Be brief.', tools: [tool('a'), tool('b')] })).toEqual({
      system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
      tools: [tool('a'), { ...tool('b'), cache_control: { type: 'ephemeral' } }],
    });
  });

  it("keeps the caller's own breakpoints", () => {
    const system: Anthropic.TextBlockParam[] = [
      { type: 'text', text: 'stable', cache_control: { type: 'ephemeral', ttl: '1h' } },
      { type: 'text', text: 'volatile' },
    ];
    expect(withPromptCaching({ system })).toEqual({ system });
    expect(withPromptCaching({})).toEqual({});
  });
});

describe('DeltaPublisher', () => {
  it('sends the first deltas soon, merges later ones per block, and lets the start marker ride along', () => {
    vi.useFakeTimers();
    try {
      const sent: Array<{ event: ModelStreamEvent; force: boolean }> = [];
      const publisher = new DeltaPublisher(
        { publish: (event, options) => sent.push({ event, force: options?.forceFlush === true }) },
        { callId: 'c', attempt: 2 },
        150,
      );
      publisher.retry();
      publisher.start('req_1', 'm', { inputTokens: 10, inputCostUsd: 0.1, outputUsdPerToken: 0.01 });
      publisher.delta(0, 'thinking', 'hm');
      publisher.delta(0, 'thinking', 'm.');
      publisher.delta(1, 'text', 'Hel');
      publisher.delta(1, 'text', 'lo');
      // Markers are queued, not forced: they travel with the first deltas.
      expect(sent.map((entry) => [entry.event.kind, entry.force])).toEqual([
        ['retry', false],
        ['start', false],
      ]);
      vi.advanceTimersByTime(24);
      expect(sent).toHaveLength(2);
      vi.advanceTimersByTime(1);
      // The first deltas 25 ms after they came, forced so the watcher sees text at once.
      expect(sent.slice(2)).toEqual([
        { event: { kind: 'delta', callId: 'c', attempt: 2, index: 0, block: 'thinking', text: 'hmm.' }, force: false },
        { event: { kind: 'delta', callId: 'c', attempt: 2, index: 1, block: 'text', text: 'Hello' }, force: true },
      ]);
      // Later deltas wait for the full interval, merged.
      publisher.delta(1, 'text', ' there');
      publisher.delta(1, 'text', '!');
      vi.advanceTimersByTime(149);
      expect(sent).toHaveLength(4);
      vi.advanceTimersByTime(1);
      expect(sent[4]).toEqual({ event: { kind: 'delta', callId: 'c', attempt: 2, index: 1, block: 'text', text: ' there!' }, force: true });
      publisher.delta(1, 'text', '.');
      publisher.stop('end_turn');
      expect(sent.slice(5)).toEqual([
        { event: { kind: 'delta', callId: 'c', attempt: 2, index: 1, block: 'text', text: '.' }, force: true },
        { event: { kind: 'stop', callId: 'c', attempt: 2, stopReason: 'end_turn' }, force: true },
      ]);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('MessageAccumulator', () => {
  it('keeps unknown block types and citations as sent, and is complete only at message_stop', () => {
    const accumulator = new MessageAccumulator();
    const events = [
      {
        type: 'message_start',
        message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 5, output_tokens: 1 } },
      },
      { type: 'content_block_start', index: 0, content_block: { type: 'redacted_thinking', data: 'opaque-bytes' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '', citations: null } },
      { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Per the doc' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'citations_delta', citation: { type: 'char_location', cited_text: 'x' } } },
      { type: 'content_block_stop', index: 1 },
      { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 12, input_tokens: null } },
    ] as unknown as Anthropic.RawMessageStreamEvent[];
    for (const event of events) accumulator.apply(event);
    expect(accumulator.complete).toBe(false);
    accumulator.apply({ type: 'message_stop' });
    const { message } = accumulator.result();
    expect(message.content).toEqual([
      { type: 'redacted_thinking', data: 'opaque-bytes' },
      { type: 'text', text: 'Per the doc', citations: [{ type: 'char_location', cited_text: 'x' }] },
    ]);
    expect(message.usage).toEqual({ input_tokens: 5, output_tokens: 12 });
    expect(message.stop_reason).toBe('end_turn');
  });
});

describe('sdkTimeoutMs', () => {
  it('stays below start-to-close so the SDK gives up first', () => {
    expect(sdkTimeoutMs(3_000, 600_000)).toBe(2_000);
    expect(sdkTimeoutMs(600_000, 600_000)).toBe(540_000);
    expect(sdkTimeoutMs(600_000, 120_000)).toBe(120_000);
    expect(sdkTimeoutMs(undefined, 120_000)).toBe(120_000);
  });
});
