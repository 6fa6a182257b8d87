// The pieces around the SDK call: cache breakpoints, merged deltas, the message
// accumulator and the SDK timeout derived from start-to-close.
import type Anthropic from '@anthropic-ai/sdk';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MessageAccumulator } from '../../activities/llm-accumulate';
import { conversationBreakpoints, withPromptCaching } from '../../activities/llm-cache';
import { DeltaPublisher } from '../../activities/llm-deltas';
import { LIVE_TAIL_CHARS, liveText, type ModelStreamEvent } from '../../shared/model-stream';
import { sdkTimeoutMs } from '../../activities/llm';

describe('prompt caching', () => {
  const tool = (name: string): Anthropic.Tool => ({ name, input_schema: { type: 'object' } });
  const EPH = { type: 'ephemeral' } as const;
  const use = (id: string): Anthropic.ToolUseBlockParam => ({ type: 'tool_use', id, name: 'read_file', input: { path: id } });
  const result = (id: string): Anthropic.ToolResultBlockParam => ({ type: 'tool_result', tool_use_id: id, content: `contents of ${id}` });
  const count = (r: ReturnType<typeof withPromptCaching>) => JSON.stringify(r).split('"cache_control"').length - 1;

  it('puts a breakpoint on the last message block, the system prompt (tools and system) and the last tool (tools alone)', () => {
    expect(withPromptCaching({ system: 'Be brief.', tools: [tool('a'), tool('b')], messages: [{ role: 'user', content: 'hi' }] })).toEqual({
      system: [{ type: 'text', text: 'Be brief.', cache_control: EPH }],
      tools: [tool('a'), { ...tool('b'), cache_control: EPH }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: EPH }] }],
    });
    // A one-shot call (planner, critic) caches tools and system, not its prompt.
    expect(withPromptCaching({ system: 'Plan.', tools: [tool('a')], messages: [{ role: 'user', content: 'goal' }] }, { conversation: false }).messages).toEqual([{ role: 'user', content: 'goal' }]);
    // Without a system prompt the last tool closes the prefix.
    expect(withPromptCaching({ tools: [tool('a')], messages: [] }).tools).toEqual([{ ...tool('a'), cache_control: EPH }]);
  });

  it("marks the previous call's tail, so a call that adds more than 20 blocks still reads what the last one wrote", () => {
    const uses = Array.from({ length: 12 }, (_, i) => use(`t${i}`));
    const results = uses.map((u) => result(u.id));
    const messages: Anthropic.MessageParam[] = [
      { role: 'user', content: 'read them all' },
      { role: 'assistant', content: [{ type: 'text', text: 'Reading.' }, ...uses] },
      { role: 'user', content: results },
    ];
    const cached = withPromptCaching({ system: 'S', messages }, { ttl: '1h' });
    const H = { type: 'ephemeral', ttl: '1h' };
    expect(cached.messages[0]).toEqual({ role: 'user', content: [{ type: 'text', text: 'read them all', cache_control: H }] });
    expect((cached.messages[2]!.content as Anthropic.ContentBlockParam[]).at(-1)).toEqual({ ...results.at(-1), cache_control: H });
    expect(cached.system).toEqual([{ type: 'text', text: 'S', cache_control: H }]);
    expect(count(cached)).toBe(3);
    // The stored conversation is never changed.
    expect(JSON.stringify(messages)).not.toContain('cache_control');
  });

  it('never places more than 4, and keeps what a caller placed', () => {
    const system: Anthropic.TextBlockParam[] = [
      { type: 'text', text: 'stable', cache_control: { type: 'ephemeral', ttl: '1h' } },
      { type: 'text', text: 'volatile', cache_control: EPH },
      { type: 'text', text: 'more', cache_control: EPH },
    ];
    const messages: Anthropic.MessageParam[] = [
      { role: 'user', content: 'a' },
      { role: 'assistant', content: 'b' },
      { role: 'user', content: 'c' },
    ];
    const cached = withPromptCaching({ system, messages });
    expect(cached.system).toEqual(system);
    expect(count(cached)).toBe(4);
    expect(withPromptCaching({ messages: [] })).toEqual({ messages: [] });
  });

  it('skips blocks that cannot carry a breakpoint (thinking, empty text)', () => {
    const messages: Anthropic.MessageParam[] = [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: [{ type: 'thinking', thinking: 'hm', signature: 's' }, use('t1')] },
      { role: 'user', content: [result('t1')] },
    ];
    const cached = withPromptCaching({ messages });
    expect(cached.messages[1]).toEqual(messages[1]);
    expect(conversationBreakpoints(messages)).toEqual({ rolling: 2, tail: 0 });
  });

  it('gives the same bytes for the same conversation (a retry, another worker, after continue-as-new)', () => {
    const request = { system: 'S', tools: [tool('a')], messages: [{ role: 'user' as const, content: 'x' }] };
    expect(JSON.stringify(withPromptCaching(request))).toBe(JSON.stringify(withPromptCaching(structuredClone(request))));
  });
});

describe('DeltaPublisher', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());
  const sink = () => {
    const sent: Array<{ event: ModelStreamEvent; force: boolean }> = [];
    return { sent, topic: { publish: (event: ModelStreamEvent, options?: { forceFlush?: boolean }) => sent.push({ event, force: options?.forceFlush === true }) } };
  };

  it('sends the first deltas soon with the markers, merges later ones per block, and hands the rest to the result', () => {
    const { sent, topic } = sink();
    const publisher = new DeltaPublisher(topic, { callId: 'c', attempt: 2 }, () => 150);
    publisher.retry();
    publisher.start('req_1', 'm', { inputTokens: 10, inputCostUsd: 0.1, outputUsdPerToken: 0.01 });
    publisher.delta(0, 'thinking', 'hm');
    publisher.delta(0, 'thinking', 'm.');
    publisher.delta(1, 'text', 'Hel');
    publisher.delta(1, 'text', 'lo');
    vi.advanceTimersByTime(24);
    // Nothing yet: the markers wait for the first deltas.
    expect(sent).toHaveLength(0);
    vi.advanceTimersByTime(1);
    // The first deltas 25 ms after they came, with the markers, one forced send.
    expect(sent).toEqual([
      { event: { kind: 'retry', callId: 'c', attempt: 2 }, force: false },
      { event: { kind: 'start', callId: 'c', attempt: 2, requestId: 'req_1', model: 'm', inputTokens: 10, inputCostUsd: 0.1, outputUsdPerToken: 0.01 }, force: false },
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
    // The end is not sent: it rides the result.
    publisher.delta(1, 'text', '.');
    expect(publisher.stop('end_turn')).toEqual([
      { kind: 'delta', callId: 'c', attempt: 2, index: 1, block: 'text', text: '.' },
      { kind: 'stop', callId: 'c', attempt: 2, stopReason: 'end_turn' },
    ]);
    vi.advanceTimersByTime(1_000);
    expect(sent).toHaveLength(5);
  });

  it('sends nothing for a reply that ends before its first send: all of it is the tail', () => {
    const { sent, topic } = sink();
    const publisher = new DeltaPublisher(topic, { callId: 'c', attempt: 1 }, () => 150);
    publisher.start('req_1', 'm', { inputTokens: 10, inputCostUsd: null, outputUsdPerToken: null });
    publisher.delta(0, 'text', 'Reading ');
    publisher.delta(0, 'text', 'the file.');
    vi.advanceTimersByTime(10);
    const tail = publisher.stop('tool_use');
    vi.advanceTimersByTime(1_000);
    expect(sent).toEqual([]);
    expect(tail.map((event) => event.kind)).toEqual(['start', 'delta', 'stop']);
    expect(tail[1]).toMatchObject({ text: 'Reading the file.' });
  });

  it('sends a lone start marker after the interval (an interrupt before any text still sees what was billed), and drops held deltas on a cancel', () => {
    const { sent, topic } = sink();
    const publisher = new DeltaPublisher(topic, { callId: 'c', attempt: 1 }, () => 150);
    publisher.start('req_1', 'm', { inputTokens: 10, inputCostUsd: null, outputUsdPerToken: null });
    vi.advanceTimersByTime(149);
    expect(sent).toHaveLength(0);
    vi.advanceTimersByTime(1);
    expect(sent.map((entry) => [entry.event.kind, entry.force])).toEqual([['start', true]]);
    expect(sent[0]?.event).toMatchObject({ inputTokens: 10 });
    publisher.delta(0, 'text', 'never seen');
    publisher.discard();
    vi.advanceTimersByTime(1_000);
    expect(sent).toHaveLength(1);
  });
});

describe('live text in heartbeats', () => {
  it('shows the text and thinking streamed so far per block, each cut to its tail, and no tool input', () => {
    const accumulator = new MessageAccumulator();
    const events = [
      { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 5, output_tokens: 1 } } },
      { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Plan: read it.' } },
      { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'x'.repeat(LIVE_TAIL_CHARS) } },
      { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'END' } },
      { type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'toolu_1', name: 'read_file', input: {} } },
      { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{"path":' } },
    ] as unknown as Anthropic.RawMessageStreamEvent[];
    for (const event of events) accumulator.apply(event);
    const live = liveText({ callId: 'c', attempt: 2 }, accumulator.streamedBlocks());
    expect(live.callId).toBe('c');
    expect(live.attempt).toBe(2);
    expect(live.blocks.map(({ index, block, length }) => ({ index, block, length }))).toEqual([
      { index: 0, block: 'thinking', length: 14 },
      { index: 1, block: 'text', length: LIVE_TAIL_CHARS + 3 },
    ]);
    expect(live.blocks[0]!.tail).toBe('Plan: read it.');
    expect(live.blocks[1]!.tail).toHaveLength(LIVE_TAIL_CHARS);
    expect(live.blocks[1]!.tail.endsWith('xEND')).toBe(true);
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
