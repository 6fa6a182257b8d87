// A reader's view of a model call from its two copies (client/live-model.ts): the text so far
// read from the server, and the workflow's stream. Each character shows once, in order, and
// every stream item still comes with its offset (a resumed reader misses nothing).
import { describe, expect, it } from 'vitest';
import type { LiveModelText, ModelStreamEvent } from '../../shared/model-stream';
import { LiveOverlay } from '../../client/live-model';

const live = (text: string, tail = text, attempt = 1): LiveModelText => ({ callId: 'c', attempt, blocks: [{ index: 0, block: 'text', length: text.length, tail }] });
const item = (offset: number, data: ModelStreamEvent) => ({ topic: 'model' as const, offset, data });
const delta = (text: string, attempt = 1): ModelStreamEvent => ({ kind: 'delta', callId: 'c', attempt, index: 0, block: 'text', text });
const start: ModelStreamEvent = { kind: 'start', callId: 'c', attempt: 1, requestId: 'req_1', model: 'm' };
const textOf = (items: Array<{ data: ModelStreamEvent }>) => items.map((i) => (i.data.kind === 'delta' ? i.data.text : '')).join('');

describe('LiveOverlay', () => {
  it('shows live text first, then only what the stream adds; every stream item keeps its offset', () => {
    const overlay = new LiveOverlay();
    const first = overlay.liveItems([live('Hel')]);
    expect(first).toEqual([item(-1, delta('Hel'))]);
    expect(textOf(overlay.liveItems([live('Hello wor')]))).toBe('lo wor');
    // The stream's copy: the start marker as it is, the text already shown emptied, the rest kept.
    expect(overlay.durableItem(item(7, start))).toEqual(item(7, start));
    expect(overlay.durableItem(item(8, delta('Hello')))).toEqual(item(8, delta('')));
    expect(overlay.durableItem(item(9, delta(' world!')))).toEqual(item(9, delta('ld!')));
    expect(overlay.durableItem(item(10, { kind: 'stop', callId: 'c', attempt: 1, stopReason: 'end_turn' }))).toEqual(item(10, { kind: 'stop', callId: 'c', attempt: 1, stopReason: 'end_turn' }));
    // A describe that left before the stop says nothing new.
    expect(overlay.liveItems([live('Hello world!')])).toEqual([]);
  });

  it('waits for the stream across a gap it fell behind by; a new attempt is text of its own', () => {
    const overlay = new LiveOverlay();
    expect(textOf(overlay.liveItems([live('abc')]))).toBe('abc');
    // Only the last 3 of 9 characters came: 'def' is missing, so nothing is shown from here.
    expect(overlay.liveItems([live('abcdefghi', 'ghi')])).toEqual([]);
    expect(overlay.durableItem(item(1, delta('abcdefghi')))).toEqual(item(1, delta('defghi')));
    expect(overlay.liveItems([live('xy', 'xy', 2)])).toEqual([item(-1, delta('xy', 2))]);
    expect(overlay.durableItem(item(2, { kind: 'retry', callId: 'c', attempt: 2 }))).toEqual(item(2, { kind: 'retry', callId: 'c', attempt: 2 }));
    expect(overlay.durableItem(item(3, delta('xyz', 2)))).toEqual(item(3, delta('z', 2)));
  });

  it('passes events, and a reader that saw no live text, through unchanged', () => {
    const overlay = new LiveOverlay();
    const event = { topic: 'events' as const, offset: 3, data: { kind: 'turn.started' } };
    expect(overlay.durableItem(event)).toBe(event);
    expect(overlay.durableItem(item(4, delta('all of it')))).toEqual(item(4, delta('all of it')));
    expect(overlay.liveItems([])).toEqual([]);
  });
});
