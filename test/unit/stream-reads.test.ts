import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { ABORTED, readStreamPage, streamReadsQueued } from '../../client/stream-reads';
import type { StreamReadPage } from '../../workflows/stream-read';

// A client whose keel.stream queries wait until the test answers them, recording what was
// sent, to which workflow, and which calls were cancelled.
function fakeClient() {
  const sent: Array<{ workflowId: string; from: number; answer: (page: StreamReadPage) => void; cancelled: () => boolean }> = [];
  let signal: AbortSignal | null = null;
  const client = {
    connection: {
      withDeadline: <R>(_deadline: number, fn: () => Promise<R>) => fn(),
      withAbortSignal: <R>(s: AbortSignal, fn: () => Promise<R>) => {
        signal = s;
        return fn();
      },
    },
    workflow: {
      getHandle: (workflowId: string) => ({
        query: (_q: unknown, input: { from: number }) =>
          new Promise<StreamReadPage>((resolve) => {
            const s = signal!;
            sent.push({ workflowId, from: input.from, answer: resolve, cancelled: () => s.aborted });
          }),
      }),
    },
  } as unknown as Client;
  return { client, sent };
}

const page = (from: number): StreamReadPage => ({ items: [{ topic: 'events', offset: from, data: { seq: from } }], next: from + 1, end: from + 1, first: 0 });
const tick = () => new Promise((r) => setTimeout(r, 5));

describe('stream reads shared per workflow', () => {
  it('sends one query at a time per workflow, shares a page asked twice, and reads other workflows beside', async () => {
    const { client, sent } = fakeClient();
    const a1 = readStreamPage(client, 'a', { from: 0 });
    const a2 = readStreamPage(client, 'a', { from: 0 });
    const a3 = readStreamPage(client, 'a', { from: 5 });
    const b = readStreamPage(client, 'b', { from: 0 });
    await tick();
    expect(sent.map((s) => [s.workflowId, s.from])).toEqual([['a', 0], ['b', 0]]);
    expect(streamReadsQueued(client, 'a')).toBe(2);
    sent[0]!.answer(page(0));
    expect(await a1).toEqual(page(0));
    expect(await a2).toEqual(page(0));
    await tick();
    expect(sent.map((s) => [s.workflowId, s.from])).toEqual([['a', 0], ['b', 0], ['a', 5]]);
    sent[2]!.answer(page(5));
    sent[1]!.answer(page(0));
    expect(await a3).toEqual(page(5));
    expect(await b).toEqual(page(0));
    await tick();
    expect(streamReadsQueued(client, 'a')).toBe(0);
    expect(streamReadsQueued(client, 'b')).toBe(0);
  });

  it('a reader that goes away ends at once; its read is not sent if nobody else waits, and cancelled if already sent', async () => {
    const { client, sent } = fakeClient();
    const first = new AbortController();
    const second = new AbortController();
    const r1 = readStreamPage(client, 'a', { from: 0 }, first.signal);
    const r2 = readStreamPage(client, 'a', { from: 1 }, second.signal);
    await tick();
    expect(sent).toHaveLength(1);
    // The queued read's only reader leaves: it is never sent.
    second.abort();
    expect(await r2).toBe(ABORTED);
    // The sent read's only reader leaves: its call is cancelled.
    first.abort();
    expect(await r1).toBe(ABORTED);
    expect(sent[0]!.cancelled()).toBe(true);
    sent[0]!.answer(page(0));
    await tick();
    expect(sent).toHaveLength(1);
    expect(streamReadsQueued(client, 'a')).toBe(0);
    // A shared read stays sent while one of its readers still waits.
    const gone = new AbortController();
    const r3 = readStreamPage(client, 'a', { from: 2 }, gone.signal);
    const r4 = readStreamPage(client, 'a', { from: 2 });
    await tick();
    gone.abort();
    expect(await r3).toBe(ABORTED);
    expect(sent[1]!.cancelled()).toBe(false);
    sent[1]!.answer(page(2));
    expect(await r4).toEqual(page(2));
  });
});
