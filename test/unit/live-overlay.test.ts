// A reader's view of a model call from its two copies (client/live-model.ts): the text so far
// read from the server, and the workflow's stream. Each character shows once, in order.
import { describe, expect, it } from 'vitest';
import type { LiveModelText, ModelStreamEvent } from '../../activities/llm-deltas';
import { LiveOverlay } from '../../client/live-model';

const start = { kind: 'start', callId: 'c', attempt: 1, requestId: 'req_1', model: 'm', inputTokens: 10 } as const;
const live = (text: string, extra: Partial<LiveModelText> = {}, tail = text): LiveModelText => ({
  callId: 'c',
  attempt: 1,
  start,
  blocks: [{ index: 0, block: 'text', length: text.length, tail }],
  ...extra,
});
const item = (offset: number, data: ModelStreamEvent) => ({ topic: 'model' as const, offset, data });
const delta = (text: string, attempt = 1): ModelStreamEvent => ({ kind: 'delta', callId: 'c', attempt, index: 0, block: 'text', text });
const textOf = (items: Array<{ data: unknown } | null>) =>
  items.map((i) => (i !== null && (i.data as ModelStreamEvent).kind === 'delta' ? (i.data as { text: string }).text : '')).join('');

describe('LiveOverlay', () => {
  it('shows live text first, then only what the stream adds; the markers once', () => {
    const overlay = new LiveOverlay();
    const first = overlay.liveItems([live('Hel')]);
    expect(first.map((i) => [i.data.kind, i.offset])).toEqual([
      ['start', -1],
      ['delta', -1],
    ]);
    const more = overlay.liveItems([live('Hello wor')]);
    expect(textOf(more)).toBe('lo wor');
    // The stream's copy: its start and the text already shown are dropped, the rest kept with its offset.
    expect(overlay.durableItem(item(7, start))).toBeNull();
    expect(overlay.durableItem(item(8, delta('Hello')))).toBeNull();
    const rest = overlay.durableItem(item(9, delta(' world!')));
    expect(rest).toEqual(item(9, delta('ld!')));
    expect(overlay.durableItem(item(10, { kind: 'stop', callId: 'c', attempt: 1, stopReason: 'end_turn' }))).not.toBeNull();
    // A describe that left before the stop says nothing new.
    expect(overlay.liveItems([live('Hello world!')])).toEqual([]);
  });

  it('waits for the stream across a gap it fell behind by, and marks a new attempt as a retry', () => {
    const overlay = new LiveOverlay();
    expect(textOf(overlay.liveItems([live('abc')]))).toBe('abc');
    // Only the last 3 characters of 9 came: 'def' is missing, so nothing is shown from here.
    expect(overlay.liveItems([live('abcdefghi', {}, 'ghi')]).filter((i) => i.data.kind === 'delta')).toEqual([]);
    expect(overlay.durableItem(item(1, delta('abcdefghi')))).toEqual(item(1, delta('defghi')));
    const retried = overlay.liveItems([{ ...live('x'), attempt: 2, start: { ...start, attempt: 2 } }]);
    expect(retried.map((i) => i.data.kind)).toEqual(['retry', 'start', 'delta']);
    expect(overlay.durableItem(item(2, { kind: 'retry', callId: 'c', attempt: 2 }))).toBeNull();
  });

  it('passes events and a reader without live text through unchanged', () => {
    const overlay = new LiveOverlay();
    const event = { topic: 'events' as const, offset: 3, data: { kind: 'turn.started' } };
    expect(overlay.durableItem(event)).toBe(event);
    expect(overlay.durableItem(item(4, delta('all of it')))).toEqual(item(4, delta('all of it')));
    expect(overlay.liveItems([])).toEqual([]);
  });
});
