// Many readers of one session's event stream at once, through `keel serve`: the server puts
// one stream read at a time on each workflow, whatever the number of readers, and a reader
// that goes away leaves nothing running. Ten readers used to poll with ten queries at once;
// the worker's SDK core buffers a workflow's queries and, when it evicts the workflow (it has
// just finished, the cache is full), drops all but one of them unanswered. A clean-clone CI
// run then answered an AG-UI request on a just-closed session 504 after the API's 15 s
// (server-stream-fuzz with its reads 10 at a time, 3 of 4 runs; each with the core's "There
// were leftover buffered tasks when evicting run" seconds after that session closed).
import { type Interceptor, InterceptingCall } from '@grpc/grpc-js';
import { Client, Connection } from '@temporalio/client';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasReader } from '../../activities/live-readers';
import { KeelClient } from '../../client/keel-client';
import { streamReadsQueued } from '../../client/stream-reads';
import { startServer } from '../../server/main';
import { workflowsPath } from '../../worker/worker';
import { TEST_TOKEN } from '../fixtures/serve-process';
import { KEY, sessionEnv, waitUntil } from '../fixtures/session-harness';
import { streamReadQuery } from '../../workflows/stream-read';
import { bundle, connectTestEnv, type TemporalTestEnv } from '../helpers/temporal';

let env: TemporalTestEnv;
let workflowBundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  env = await connectTestEnv();
  workflowBundle = await bundle(workflowsPath);
});
afterAll(async () => {
  await env?.close();
});

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

/** Opens the stream, reads it for `ms` (as a browser tab would), then goes away. */
async function readFor(url: string, ms: number): Promise<{ status: number; frames: number }> {
  const res = await fetch(url, { headers: auth });
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = '';
  const end = Date.now() + ms;
  for (let left = ms; left > 0; left = end - Date.now()) {
    let timer: NodeJS.Timeout | undefined;
    const next = await Promise.race([reader.read(), new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), left)))]);
    clearTimeout(timer);
    if (next === null || next.done) break;
    text += decoder.decode(next.value, { stream: true });
  }
  await reader.cancel().catch(() => undefined);
  return { status: res.status, frames: text.split('\n\n').filter((f) => /^id: /m.test(f)).length };
}

async function timed<T>(body: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t0 = Date.now();
  const value = await body();
  return { value, ms: Date.now() - t0 };
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

        // Right after the close, as server-stream-fuzz did: ten readers of each session at once.
        counter.reset();
        const reads = await Promise.all(
          Array.from({ length: READERS }, (_, i) => [
            readFor(`${server.url}/api/workflows/${live.id}/events?from=${i % 2 ? 0 : liveItems}`, 1_500),
            readFor(`${server.url}/api/workflows/${closed.id}/events?from=0`, 1_500),
          ]).flat(),
        );
        expect(reads.map((r) => r.status)).toEqual(reads.map(() => 200));
        // Every reader got the stream (the readers from 0 saw the session's items).
        expect(reads.filter((_, i) => i % 2 === 1).every((r) => r.frames > 0)).toBe(true);
        expect(reads.filter((_, i) => i % 4 === 2).every((r) => r.frames >= liveItems)).toBe(true);
        // One stream read at a time per workflow: two sessions, at most two queries in flight.
        expect(counter.most).toBeLessThanOrEqual(2);

        // Gone: no read queued or running for either session, and no more queries sent.
        await expect.poll(() => counter.inFlight + streamReadsQueued(client, live.id) + streamReadsQueued(client, closed.id), { timeout: 3_000 }).toBe(0);
        const sent = counter.sent;
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        expect(counter.sent).toBe(sent);

        // The sessions answer at once: an AG-UI run on the ended one is refused (409, not a
        // 504 after 15 s), one on the live one runs its turn, and an approval is answered.
        const agUi = (id: string, n: number) =>
          fetch(`${server.url}/api/sessions/${id}/ag-ui`, {
            method: 'POST',
            headers: { ...auth, 'Content-Type': 'application/json' },
            body: JSON.stringify({ threadId: id, runId: `r${n}`, messages: [{ id: `u${n}`, role: 'user', content: `after the readers ${n}` }] }),
          });
        const refused = await timed(() => agUi(closed.id, 1));
        expect(refused.value.status, await refused.value.clone().text()).toBe(409);
        expect(refused.ms).toBeLessThan(5_000);
        const run = await timed(async () => {
          const res = await agUi(live.id, 2);
          return { status: res.status, text: await res.text() };
        });
        expect(run.value.status).toBe(200);
        expect(run.value.text).toContain('RUN_FINISHED');
        expect(run.ms).toBeLessThan(10_000);
        const approve = await timed(() => fetch(`${server.url}/api/workflows/${live.id}/approve`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body: JSON.stringify({ callId: 'none' }) }));
        expect(approve.value.status).toBe(409);
        expect(approve.ms).toBeLessThan(5_000);
      });
    } finally {
      await server.close();
      for (const w of started) await env.client.workflow.getHandle(w).terminate('test over').catch(() => undefined);
      await connection.close();
    }
  }, 120_000);

  it('while a model call is in flight the stream read says live: a reader keeps its busy pace, and reads the text from the server before it is in the stream', async () => {
    // The reply's text comes in three pieces 0.75 s apart: a reader that backed off as from a
    // quiet stream would ask 4 times before the first (50, 100, 200, 400 ms apart), and see each
    // up to 500 ms late.
    const s = await sessionEnv(env, workflowBundle, { name: 'slow', apiKeys: [KEY], rules: [{ name: 'slow', match: {}, reply: { delayMs: 750, chunkSize: 5, content: [{ type: 'text', text: 'Slow, but here.' }] } }] });
    const counter = new QueryCounter(true);
    const connection = await Connection.connect({ address: env.address, interceptors: [counter.interceptor] });
    const client = new Client({ connection, namespace: env.namespace });
    try {
      await s.run(async () => {
        const keel = await KeelClient.connect({ client, taskQueue: s.taskQueue });
        const session = await keel.startSession({ workspace: s.workspace });
        await session.send('warm up');
        // Nobody has read its stream yet: the worker's model calls heartbeat on their clock alone.
        expect(hasReader(session.id)).toBe(false);
        const from = await session.streamOffset();
        const abort = new AbortController();
        const deltas: Array<{ sent: number; offset: number; text: string }> = [];
        const first = (async () => {
          for await (const item of session.events({ from, topics: ['model'], signal: abort.signal })) {
            if (item.topic === 'model' && item.data.kind === 'delta') deltas.push({ sent: counter.sent, offset: item.offset, text: item.data.text });
            if (item.topic === 'model' && item.data.kind === 'stop') return deltas[0] ?? null;
          }
          return null;
        })();
        // Quiet for a while first: the reader has backed off to its idle pace before the call.
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        // The reader's queries told the worker (workflows/reader-sink.ts): its calls heartbeat their text.
        expect(hasReader(session.id)).toBe(true);
        const before = counter.sent;
        const posted = session.post('go slowly');
        // The stream read says a model call is in flight (waitUntil fails the test when it never does).
        await waitUntil(() => env.client.workflow.getHandle(session.id).query(streamReadQuery, { from: 0, limit: 1 }), (page) => page.live === true, 5_000, 'live');
        const seen = await first;
        abort.abort();
        await posted;
        expect(seen).not.toBeNull();
        // About one read per 50 ms (the default pace) while the model thought: at least 8 in 0.75 s.
        expect(seen!.sent - before).toBeGreaterThanOrEqual(8);
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
  }, 60_000);

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
  }, 60_000);
});
