// Sink calls go once per activation (workflows/sink-batches.ts): what a workflow queues in an
// activation reaches each sink as one call, in order, and nothing is sent twice or lost.
import { describe, expect, it } from 'vitest';
import { batched, flushBatches } from '../../workflows/sink-batches';

describe('sink batches', () => {
  it("sends each sink's items of an activation in one call, in order, and only once", () => {
    const events: string[][] = [];
    const spans: number[][] = [];
    const event = batched<string>((items) => events.push(items));
    const span = batched<number>((items) => spans.push(items));

    event('turn.started');
    event('model.requested');
    span(1);
    event('model.responded');
    flushBatches();
    expect(events).toEqual([['turn.started', 'model.requested', 'model.responded']]);
    expect(spans).toEqual([[1]]);

    // An activation that queued nothing sends nothing.
    flushBatches();
    expect(events).toHaveLength(1);
    expect(spans).toHaveLength(1);

    // The next activation's items go in a call of their own; a sink with none makes no call.
    event('tool.result');
    flushBatches();
    expect(events).toEqual([['turn.started', 'model.requested', 'model.responded'], ['tool.result']]);
    expect(spans).toEqual([[1]]);
  });

  it('keeps what a sink sent: items queued while a batch is sent go in the next one', () => {
    const sent: string[][] = [];
    const queue = batched<string>((items) => {
      sent.push(items);
      if (items.includes('first')) queue('queued while sending');
    });
    queue('first');
    flushBatches();
    flushBatches();
    expect(sent).toEqual([['first'], ['queued while sending']]);
  });
});
