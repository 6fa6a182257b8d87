// When a reader of a session's stream asks the server (issue 53, the first delta): it reads a
// model call's text the moment a read of the stream finds the call in flight, and it does not
// back off while the stream grows in topics it skips. A scripted client on fake timers: what is
// asked is counted before any timer runs.
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { followStream } from '../../client/events';
import type { StreamReadPage } from '../../workflows/stream-read';

interface Script {
  /** The page each read of the stream gets, in order (the last one again when they run out). */
  pages: StreamReadPage[];
  /**
   * What each describe finds, in order (the last one again when they run out): the call's live
   * text (the model activity's last heartbeat), `pending` for the call in flight with no text
   * yet, or null for no call.
   */
  described: Array<{ text: string } | 'pending' | null>;
}

function scriptedClient(script: Script): { client: Client; queries: () => number; describes: () => number } {
  let queries = 0;
  let describes = 0;
  const handle = {
    workflowId: 'wf',
    query: () => Promise.resolve(script.pages[Math.min(queries++, script.pages.length - 1)]!),
    describe: () => Promise.resolve({ status: { name: 'RUNNING' } }),
  };
  const live = (text: string) => ({ live: { callId: 'call-1', attempt: 1, blocks: [{ index: 0, block: 'text', length: text.length, tail: text }] } });
  const client = {
    workflow: { getHandle: () => handle },
    connection: { withDeadline: <R>(_deadline: number, fn: () => Promise<R>) => fn(), withAbortSignal: <R>(_signal: AbortSignal, fn: () => Promise<R>) => fn() },
    options: { namespace: 'default', loadedDataConverter: { payloadConverter: defaultPayloadConverter, payloadCodecs: [] } },
    workflowService: {
      describeWorkflowExecution: () => {
        const found = script.described[Math.min(describes++, script.described.length - 1)]!;
        const pendingActivities =
          found === null
            ? []
            : found === 'pending'
              ? [{ activityType: { name: 'callModel' }, heartbeatDetails: null }]
              : [{ activityType: { name: 'callModel' }, heartbeatDetails: { payloads: [defaultPayloadConverter.toPayload(live(found.text))] } }];
        return Promise.resolve({ pendingActivities });
      },
    },
  } as unknown as Client;
  return { client, queries: () => queries, describes: () => describes };
}

const page = (end: number, live = false): StreamReadPage => ({ items: [], next: end, end, first: 0, ...(live ? { live: true, liveCalls: ['call-1'] } : {}) });

/** Lets every settled promise run, without moving the fake clock. */
const settle = () => vi.advanceTimersByTimeAsync(0);

describe("a stream reader's pace", () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('reads the live text as soon as a read of the stream finds a model call in flight, not a pause later', async () => {
    const { client, queries, describes } = scriptedClient({ pages: [page(3, true)], described: [{ text: 'Hello' }] });
    const abort = new AbortController();
    const items = followStream(client, 'wf', { from: 3, topics: ['model'], pollCooldownMs: 1_000, signal: abort.signal });
    const first = items.next();
    await settle();
    // One read of the stream said a call is in flight; its text is asked for at once.
    expect(queries()).toBe(1);
    expect(describes()).toBe(1);
    const item = await first;
    expect(item.value).toMatchObject({ topic: 'model', offset: -1, data: { kind: 'delta', callId: 'call-1', text: 'Hello' } });
    abort.abort();
    await items.return(undefined);
  });

  it('asks the server again at its pace while the call in flight has written nothing yet, without reading the stream in between', async () => {
    const { client, queries, describes } = scriptedClient({ pages: [page(3, true)], described: ['pending', 'pending', { text: 'Hi' }] });
    const abort = new AbortController();
    const items = followStream(client, 'wf', { from: 3, topics: ['model'], pollCooldownMs: 100, signal: abort.signal });
    const first = items.next();
    await settle();
    expect(describes()).toBe(1);
    await vi.advanceTimersByTimeAsync(100);
    await vi.advanceTimersByTimeAsync(100);
    expect(describes()).toBe(3);
    // The one read of the stream that found the call; each empty describe used to read it again.
    expect(queries()).toBe(1);
    expect((await first).value).toMatchObject({ data: { kind: 'delta', text: 'Hi' } });
    abort.abort();
    await items.return(undefined);
  });

  it('keeps its busy pace while the stream grows in topics it does not follow (a turn starting)', async () => {
    // The model topic's reader sees no item while the turn's events come: the stream's end grows.
    const { client, queries } = scriptedClient({ pages: [page(3), page(5), page(6), page(8), page(9), page(11), page(12), page(14)], described: [null] });
    const abort = new AbortController();
    const items = followStream(client, 'wf', { from: 3, topics: ['model'], pollCooldownMs: 100, signal: abort.signal });
    void items.next();
    await settle();
    expect(queries()).toBe(1);
    for (let t = 0; t < 7; t++) await vi.advanceTimersByTimeAsync(100);
    // Every 100 ms while the end grows (backing off, it read at 0, 100, 300 and 700 ms: 4).
    expect(queries()).toBeGreaterThanOrEqual(7);
    abort.abort();
    await items.return(undefined);
  });

  it('still backs off on a stream that does not grow', async () => {
    const { client, queries } = scriptedClient({ pages: [page(3)], described: [null] });
    const abort = new AbortController();
    const items = followStream(client, 'wf', { from: 3, topics: ['model'], pollCooldownMs: 100, signal: abort.signal });
    void items.next();
    await settle();
    for (let t = 0; t < 7; t++) await vi.advanceTimersByTimeAsync(100);
    expect(queries()).toBe(4);
    abort.abort();
    await items.return(undefined);
  });
});
