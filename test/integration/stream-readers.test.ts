// Many readers of one session's event stream at once, through `keel serve`: the server puts
// one stream read at a time on each workflow, whatever the number of readers, and a reader
// that goes away leaves nothing running. Ten readers used to poll with ten queries at once;
// the worker's SDK core buffers a workflow's queries and, when it evicts the workflow (it has
// just finished, the cache is full), drops all but one of them unanswered. A clean-clone CI
// run then answered an AG-UI request on a just-closed session 504 after the API's 15 s
// (server-stream-fuzz with its reads 10 at a time, 3 of 4 runs; each with the core's "There
// were leftover buffered tasks when evicting run" seconds after that session closed).
import { type Interceptor, InterceptingCall } from '@grpc/grpc-js';
import { defaultPayloadConverter } from '@temporalio/common';
import { decodePayloadWire, encodePayloadWire, workflowStreamPollUpdate, workflowStreamPublishSignal } from '@temporalio/workflow-streams/workflow';
import { Client, Connection } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { hasReader } from '../../activities/live-readers';
import { KeelClient } from '../../client/keel-client';
import { streamReadsQueued } from '../../client/stream-reads';
import { startServer } from '../../server/main';
import { TEST_TOKEN } from '../fixtures/serve-process';
import { KEY, sessionEnv, waitUntil } from '../fixtures/session-harness';
import { streamReadQuery } from '../../workflows/stream-read';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();

const auth = { Authorization: `Bearer ${TEST_TOKEN}` };
const READERS = 10;

/** Queries the server's connection has sent and not yet had answered, and the most at once. */
class QueryCounter {
  /** Counts describes too (the reads of a model call's live text). */
  constructor(private readonly describes = false) {}
  inFlight = 0;
  most = 0;
  sent = 0;
  readonly interceptor: Interceptor = (options, nextCall) => {
    if (!options.method_definition.path.endsWith('/QueryWorkflow') && !(this.describes && options.method_definition.path.endsWith('/DescribeWorkflowExecution'))) return new InterceptingCall(nextCall(options));
    return new InterceptingCall(nextCall(options), {
      start: (metadata, _listener, next) => {
        this.sent++;
        this.most = Math.max(this.most, ++this.inFlight);
        next(metadata, {
          onReceiveStatus: (status, nextStatus) => {
            this.inFlight--;
            nextStatus(status);
          },
        });
      },
    });
  };
  reset() {
    this.most = this.inFlight;
  }
}

/**
 * Opens the stream and reads it (as a browser tab would) until it has `enough` frames or
 * `leave` settles, then goes away. Readers used to read for 1.5 s, and on a busy machine some
 * had not had their first frame by then.
 */
async function readUntil(url: string, enough: (frames: number) => boolean, leave: Promise<unknown>, maxMs = 60_000): Promise<{ status: number; frames: number }> {
  const res = await fetch(url, { headers: auth });
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = '';
  const framesIn = () => text.split('\n\n').filter((f) => /^id: /m.test(f)).length;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), maxMs)));
  const left = leave.then(() => null);
  try {
    while (!enough(framesIn())) {
      const next = await Promise.race([reader.read(), left, deadline]);
      if (next === null || next.done) break;
      text += decoder.decode(next.value, { stream: true });
    }
  } finally {
    clearTimeout(timer);
    await reader.cancel().catch(() => undefined);
  }
  return { status: res.status, frames: framesIn() };
}

/** Queries and describes a connection sent, each with when it was sent and when it was answered. */
class CallTimes {
  readonly calls: Array<{ sentAt: number; answeredAt: number | null }> = [];
  readonly interceptor: Interceptor = (options, nextCall) => {
    const path = options.method_definition.path;
    if (!path.endsWith('/QueryWorkflow') && !path.endsWith('/DescribeWorkflowExecution')) return new InterceptingCall(nextCall(options));
    return new InterceptingCall(nextCall(options), {
      start: (metadata, _listener, next) => {
        const call = { sentAt: Date.now(), answeredAt: null as number | null };
        this.calls.push(call);
        next(metadata, {
          onReceiveStatus: (status, nextStatus) => {
            call.answeredAt = Date.now();
            nextStatus(status);
          },
        });
      },
    });
  };
  /**
   * The reader's pauses (one reader on the connection: its calls are one at a time): from an
   * answer to its next call, for the calls sent from `from` on whose next call was sent by `to`.
   */
  pauses(from = 0, to = Infinity): number[] {
    const out: number[] = [];
    for (let i = 1; i < this.calls.length; i++) {
      const { sentAt, answeredAt } = this.calls[i - 1]!;
      const next = this.calls[i]!.sentAt;
      if (answeredAt !== null && sentAt >= from && next <= to) out.push(next - answeredAt);
    }
    return out;
  }
}

describe('many readers of one stream', () => {
  it('share one read at a time per workflow; when they go away nothing is left running, and the sessions answer at once', async () => {
    const s = await sessionEnv(env, workflowBundle, { name: 'ok', apiKeys: [KEY], rules: [{ name: 'ok', match: {}, reply: { content: [{ type: 'text', text: 'ok' }] } }] }, {}, { ownWorkflowThread: true });
    const counter = new QueryCounter();
    const connection = await Connection.connect({ address: env.address, interceptors: [counter.interceptor] });
    const client = new Client({ connection, namespace: env.namespace });
    const keel = await KeelClient.connect({ client, taskQueue: s.taskQueue });
    const server = await startServer({ keel, port: 0, workspace: s.workspace, env: { KEEL_API_TOKEN: TEST_TOKEN, KEEL_API_APPROVER: 'readers' } });
    const started: string[] = [];
    try {
      await s.run(async () => {
        const live = await keel.startSession({ workspace: s.workspace });
        const closed = await keel.startSession({ workspace: s.workspace });
        started.push(live.id, closed.id);
        await live.send('hello');
        await closed.send('hello');
        await closed.close('readers: an ended session');
        await closed.result().catch(() => undefined);
        const liveItems = await live.streamOffset();

        const closedItems = await closed.streamOffset();

        // Right after the close, as server-stream-fuzz did: ten readers of each session at once.
        // Those with items to read stay until they have them all; those at the live session's
        // end (nothing to come) stay until the others are done.
        counter.reset();
        const readers = Array.from({ length: READERS }, (_, i) => [
          i % 2 ? { url: `${server.url}/api/workflows/${live.id}/events?from=0`, enough: (n: number) => n >= liveItems } : { url: `${server.url}/api/workflows/${live.id}/events?from=${liveItems}`, enough: null },
          { url: `${server.url}/api/workflows/${closed.id}/events?from=0`, enough: (n: number) => n >= closedItems },
        ]).flat();
        let othersDone!: () => void;
        const whenOthersDone = new Promise<void>((resolve) => (othersDone = resolve));
        const reading = readers.map((r) => readUntil(r.url, r.enough ?? (() => false), r.enough ? new Promise(() => {}) : whenOthersDone));
        void Promise.allSettled(reading.filter((_, i) => readers[i]!.enough)).then(() => othersDone());
        const reads = await Promise.all(reading);
        expect(reads.map((r) => r.status)).toEqual(reads.map(() => 200));
        // Every reader got the stream (the readers from 0 saw the session's items).
        expect(reads.filter((_, i) => i % 2 === 1).every((r) => r.frames > 0)).toBe(true);
        expect(reads.filter((_, i) => i % 4 === 2).every((r) => r.frames >= liveItems)).toBe(true);
        // One stream read at a time per workflow: two sessions, at most two queries in flight.
        expect(counter.most).toBeLessThanOrEqual(2);

        // Gone: no read queued or running for either session, and no more queries sent. The
        // server learns that a reader left when its connection closes, a moment after: a read
        // it had paused for may still go out (one did, 1 s after, in a clean-clone run). So it
        // waits for three quiet seconds in a row, which a reader left running never gives (it
        // reads at least every 1.5 s, however quiet the stream).
        await expect.poll(() => counter.inFlight + streamReadsQueued(client, live.id) + streamReadsQueued(client, closed.id), { timeout: 30_000 }).toBe(0);
        let sent = counter.sent;
        let quietSince = Date.now();
        await waitUntil(
          async () => {
            if (counter.sent !== sent) [sent, quietSince] = [counter.sent, Date.now()];
            return Date.now() - quietSince;
          },
          (quietMs) => quietMs >= 3_000,
          30_000,
          'three seconds without a stream query',
        );
        expect(counter.inFlight).toBe(0);

        // The sessions answer: an AG-UI run on the ended one is refused (409, where it was a
        // 504 after the API's 15 s), one on the live one runs its turn, and an approval is answered.
        const agUi = (id: string, n: number) =>
          fetch(`${server.url}/api/sessions/${id}/ag-ui`, {
            method: 'POST',
            headers: { ...auth, 'Content-Type': 'application/json' },
            body: JSON.stringify({ threadId: id, runId: `r${n}`, messages: [{ id: `u${n}`, role: 'user', content: `after the readers ${n}` }] }),
          });
        const refused = await agUi(closed.id, 1);
        expect(refused.status, await refused.clone().text()).toBe(409);
        const run = await agUi(live.id, 2);
        expect(run.status).toBe(200);
        expect(await run.text()).toContain('RUN_FINISHED');
        const approve = await fetch(`${server.url}/api/workflows/${live.id}/approve`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body: JSON.stringify({ callId: 'none' }) });
        expect(approve.status).toBe(409);
      });
    } finally {
      await server.close();
      for (const w of started) await env.client.workflow.getHandle(w).terminate('test over').catch(() => undefined);
      await connection.close();
    }
  }, 120_000);

  it('while a model call is in flight the stream read says live: a reader keeps its busy pace, and reads the text from the server before it is in the stream', async () => {
    // The reply's text comes in three pieces 0.75 s apart. A reader pauses 50 ms between reads
    // while items come or a call is live, and backs off to 500 ms on a quiet stream. What is
    // asserted is its pauses, not how many reads fit in the call: a busy machine's slower
    // round trips (once 8 reads in 0.75 s were wanted) do not change the pauses it chooses.
    const s = await sessionEnv(env, workflowBundle, { name: 'slow', apiKeys: [KEY], rules: [{ name: 'slow', match: {}, reply: { delayMs: 750, chunkSize: 5, content: [{ type: 'text', text: 'Slow, but here.' }] } }] });
    const times = new CallTimes();
    const connection = await Connection.connect({ address: env.address, interceptors: [times.interceptor] });
    const client = new Client({ connection, namespace: env.namespace });
    try {
      await s.run(async () => {
        const keel = await KeelClient.connect({ client, taskQueue: s.taskQueue });
        const session = await keel.startSession({ workspace: s.workspace });
        await session.send('warm up');
        // Nobody has read its stream yet: the worker's model calls heartbeat on their clock alone.
        expect(hasReader(session.id)).toBe(false);
        const from = await session.streamOffset();
        const readerStarts = times.calls.length;
        const abort = new AbortController();
        const deltas: Array<{ offset: number; text: string }> = [];
        let stoppedAt = Infinity;
        const first = (async () => {
          for await (const item of session.events({ from, topics: ['model'], signal: abort.signal })) {
            if (item.topic === 'model' && item.data.kind === 'delta') deltas.push({ offset: item.offset, text: item.data.text });
            if (item.topic === 'model' && item.data.kind === 'stop') {
              stoppedAt = Date.now();
              return deltas[0] ?? null;
            }
          }
          return null;
        })();
        // Quiet first: the reader has backed off to its idle pace before the call (a pause of
        // 400 ms or more), and its queries told the worker (workflows/reader-sink.ts): its calls heartbeat their text.
        const idle = await waitUntil(async () => times.pauses(times.calls[readerStarts]?.sentAt ?? Infinity), (pauses) => pauses.some((ms) => ms >= 400), 60_000, 'the reader at its idle pace');
        expect(idle.length).toBeGreaterThan(0);
        await waitUntil(async () => hasReader(session.id), (read) => read, 60_000, 'the worker to know of the reader');
        const posted = session.post('go slowly');
        // The stream read says a model call is in flight (waitUntil fails the test when it never does).
        await waitUntil(() => env.client.workflow.getHandle(session.id).query(streamReadQuery, { from: 0, limit: 1 }), (page) => page.live === true, 60_000, 'live');
        // From here to the stop the call is live: the reader's answers say so, and it pauses the busy 50 ms after each.
        const liveFrom = Date.now();
        const seen = await first;
        abort.abort();
        await posted;
        expect(seen).not.toBeNull();
        const pauses = times.pauses(liveFrom, stoppedAt);
        console.log(`reader pauses while the call was live (ms): ${pauses.join(', ')}`);
        expect(pauses.length).toBeGreaterThanOrEqual(2);
        // The median, not each: a busy machine's timers fire late now and then (up to 230 ms at
        // load 30). A reader that backed off would pause 100, 200, 400, 500, 500 ms….
        const median = [...pauses].sort((a, b) => a - b)[Math.floor(pauses.length / 2)]!;
        expect(median).toBeLessThan(250);
        // Each character once; some came from the model activity's heartbeats (offset -1) before
        // the stream had them (the stream's copy of those came emptied).
        expect(deltas.map((d) => d.text).join('')).toBe('Slow, but here.');
        expect(deltas.some((d) => d.offset === -1 && d.text.length > 0)).toBe(true);
        const done = await session.send('again');
        expect(done.outcome).toBe('completed');
        const quiet = await env.client.workflow.getHandle(session.id).query(streamReadQuery, { from: 0, limit: 1 });
        expect(quiet.live).toBeUndefined();
      });
    } finally {
      await connection.close();
    }
  }, 120_000);

  it('a call that began while the reader paused shows its live text only after what the stream holds before it: the texts come in order', async () => {
    // Call 1 streams for ~0.6 s, so a reader's query finds it in flight; the reader then pauses
    // 1.5 s (its pollCooldownMs) and describes the workflow: call 1 is over, the tool ran, call 2
    // streams. Call 1's text is in the stream, not yet read: it must come first.
    const s = await sessionEnv(env, workflowBundle, {
      name: 'ahead',
      apiKeys: [KEY],
      rules: [
        { name: 'first', match: { hasToolResults: false }, reply: { delayMs: 60, chunkSize: 2, content: [{ type: 'text', text: 'First call.' }, { type: 'tool_use', id: 'toolu_ahead_1', name: 'list_dir', input: { path: '.' } }] } },
        { name: 'second', match: { hasToolResults: true }, reply: { delayMs: 300, chunkSize: 4, content: [{ type: 'text', text: 'Second call, streaming slowly for a while.' }] } },
      ],
    });
    await s.run(async () => {
      const keel = await KeelClient.connect({ client: env.client, taskQueue: s.taskQueue });
      const session = await keel.startSession({ workspace: s.workspace, policy: { mode: 'full-auto' } });
      const abort = new AbortController();
      const deltas: Array<{ offset: number; text: string }> = [];
      const reading = (async () => {
        let stops = 0;
        for await (const item of session.events({ topics: ['model'], pollCooldownMs: 1_500, signal: abort.signal })) {
          if (item.topic !== 'model') continue;
          if (item.data.kind === 'delta' && item.data.text.length > 0) deltas.push({ offset: item.offset, text: item.data.text });
          if (item.data.kind === 'stop' && ++stops === 2) return;
        }
      })();
      const done = await session.send('two calls, please');
      expect(done.outcome).toBe('completed');
      await reading;
      abort.abort();
      // Each character once, call 1's before call 2's; call 2's came live (offset -1), before the stream had them.
      expect(deltas.map((d) => d.text).join('')).toBe('First call.Second call, streaming slowly for a while.');
      expect(deltas.some((d) => d.offset === -1)).toBe(true);
    });
  });

  it("the stream query pages through what the library's log holds: the same items at the same offsets, a publisher's repeated batch once", async () => {
    // The query reads Keel's own record of the stream (workflows/keel-stream.ts), the poll update
    // the library's log: they must agree item for item, duplicates dropped alike.
    const s = await sessionEnv(env, workflowBundle, {
      name: 'record',
      apiKeys: [KEY],
      rules: [{ name: 'streamed', match: {}, reply: { delayMs: 30, chunkSize: 3, content: [{ type: 'text', text: 'Streamed in small pieces.' }] } }],
    });
    await s.run(async () => {
      const keel = await KeelClient.connect({ client: env.client, taskQueue: s.taskQueue });
      const session = await keel.startSession({ workspace: s.workspace });
      await session.send('hello');
      const handle = env.client.workflow.getHandle(session.id);
      const batch = (sequence: number, text: string) => ({ publisher_id: 'record-test', sequence, items: [{ topic: 'probe', data: encodePayloadWire(defaultPayloadConverter.toPayload(text)) }] });
      await handle.signal(workflowStreamPublishSignal, batch(1, 'one'));
      await handle.signal(workflowStreamPublishSignal, batch(1, 'one again'));
      await handle.signal(workflowStreamPublishSignal, batch(2, 'two'));
      await handle.signal(workflowStreamPublishSignal, batch(2, 'two again'));
      const end = await waitUntil(() => session.streamOffset(), () => true);

      const queried: Array<{ topic: string; offset: number; data: unknown }> = [];
      for (let from = 0; ; ) {
        const page = await handle.query(streamReadQuery, { from });
        queried.push(...page.items);
        expect(page.end).toBe(end);
        if (page.next >= page.end) break;
        from = page.next;
      }
      const polled = await handle.executeUpdate(workflowStreamPollUpdate, { args: [{ topics: [], from_offset: 0 }] });
      const library = polled.items.map((item) => ({ topic: item.topic, offset: item.offset, data: defaultPayloadConverter.fromPayload(decodePayloadWire(item.data)) }));

      expect(queried).toEqual(library);
      expect(queried.length).toBe(end);
      expect(queried.filter((item) => item.topic === 'probe').map((item) => item.data)).toEqual(['one', 'two']);
      expect(queried.some((item) => item.topic === 'model')).toBe(true);
      expect(queried.some((item) => item.topic === 'events')).toBe(true);
    });
  });
});
