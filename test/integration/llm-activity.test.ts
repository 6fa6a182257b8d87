// The model activity end to end: a real worker on the run's Temporal dev server, the real
// `@anthropic-ai/sdk` over loopback HTTP to the stand-in, and a client subscribed to the
// workflow's stream the way a UI would be.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forgetReaders, noteReader } from '../../activities/live-readers';
import { MODEL_FAILURE, type ModelCallHeartbeat, type ModelCallInput, type ModelStreamEvent } from '../../activities/llm';
import { streamMachine, type StreamState } from '../../machines/stream';
import { type Standin, startStandin } from '../../standin/server';
import { FAST_RETRY, withModelWorker } from '../fixtures/llm-harness';
import { interruptSignal } from '../fixtures/llm-workflow';
import { waitUntil } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const here = path.dirname(fileURLToPath(import.meta.url));
const KEY = 'sk-ant-test-7f3a9c1e5b';

const { env, workflowBundle } = useTemporal({ workflows: path.join(here, '../fixtures/llm-workflow.ts') });
let standin: Standin;

beforeAll(async () => {
  standin = await startStandin({ scenario: { rules: [] } });
});
afterAll(async () => {
  await standin?.close();
});

const config = () => ({ env: { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: standin.url } });

function call(text: string, extra: Partial<ModelCallInput> = {}): ModelCallInput {
  return {
    callId: 'turn-1',
    model: 'claude-sonnet-4-6',
    maxTokens: 1024,
    system: 'You are a careful assistant.',
    conversation: { kind: 'inline', messages: [{ role: 'user', content: text }] },
    ...extra,
  };
}

const textOf = (events: ModelStreamEvent[], attempt?: number) =>
  events
    .filter((event) => event.kind === 'delta' && event.block === 'text' && (attempt === undefined || event.attempt === attempt))
    .map((event) => (event.kind === 'delta' ? event.text : ''))
    .join('');

async function historyText(handle: { fetchHistory(): Promise<unknown> }): Promise<string> {
  return JSON.stringify(await handle.fetchHistory());
}

/** Signals the activity sent to the workflow's stream. */
async function streamSignals(handle: { fetchHistory(): Promise<{ events?: Array<{ workflowExecutionSignaledEventAttributes?: { signalName?: string | null } | null }> | null }> }): Promise<number> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).filter((event) => event.workflowExecutionSignaledEventAttributes?.signalName === '__temporal_workflow_stream_publish').length;
}

describe('model activity against the stand-in', () => {
  it('returns a text answer with thinking intact, and streams the deltas to a subscriber in order', async () => {
    const answer = 'Durable execution means the program survives the machine it runs on. '.repeat(4);
    const thinking = 'The user asks what durable execution is. Answer plainly.';
    const signature = 'EqQBCkYIBxgCKkBsig-opaque-do-not-touch==';
    standin.setScenario({
      name: 'text',
      rules: [
        {
          match: { lastUserContains: 'durable' },
          reply: {
            delayMs: 5,
            chunkSize: 7,
            content: [
              { type: 'thinking', thinking, signature },
              { type: 'text', text: answer },
            ],
            usage: { input_tokens: 1200, output_tokens: 300, cache_read_input_tokens: 2000, cache_creation_input_tokens: 0 },
          },
        },
      ],
    });
    const tools = [{ name: 'read_file', description: 'Read a file', input_schema: { type: 'object' as const, properties: {} } }];
    await withModelWorker(env, workflowBundle, config(), async (start) => {
      const run = await start({ call: call('what is durable execution?', { tools }) });
      const outcome = await run.outcome();

      expect(outcome.status).toBe('completed');
      if (outcome.status !== 'completed') return;
      const { result } = outcome;
      expect(result.message.content).toEqual([
        { type: 'thinking', thinking, signature },
        { type: 'text', text: answer },
      ]);
      expect(result.stopReason).toBe('end_turn');
      expect(result.attempt).toBe(1);
      expect(result.usage).toMatchObject({ input_tokens: 1200, output_tokens: 300, cache_read_input_tokens: 2000 });
      expect(result.requestId).toBe(standin.requests.at(-1)?.requestId);
      // Sonnet 4.6: $3 input, $15 output, $0.30 cache reads per million tokens.
      expect(result.cost?.total).toBeCloseTo((1200 * 3 + 300 * 15 + 2000 * 0.3) / 1e6, 10);

      // The subscriber saw start, the thinking, then the text, in order, then stop.
      const events = run.subscriber.events;
      expect(events[0]).toMatchObject({ kind: 'start', callId: 'turn-1', attempt: 1, requestId: result.requestId });
      expect(events.at(-1)).toMatchObject({ kind: 'stop', stopReason: 'end_turn' });
      expect(textOf(events)).toBe(answer);
      const thought = events.filter((event) => event.kind === 'delta' && event.block === 'thinking');
      expect(thought.map((event) => (event.kind === 'delta' ? event.text : '')).join('')).toBe(thinking);
      const firstText = events.findIndex((event) => event.kind === 'delta' && event.block === 'text');
      expect(events.findLastIndex((event) => event.kind === 'delta' && event.block === 'thinking')).toBeLessThan(firstText);
      // Deltas are merged: far fewer stream entries than the 40-odd SSE deltas sent.
      expect(events.length).toBeLessThan(20);
      // A reply that streams for ~0.3 s is watched live: some of it came by signal, before the result.
      expect(await streamSignals(run.handle)).toBeGreaterThan(0);

      // What went over the wire: Bearer auth, cache breakpoints on the system prompt (it
      // closes the tools + system prefix), the last tool and the conversation's last block.
      const sent = standin.requests.at(-1)!;
      expect(sent.auth).toBe('bearer');
      expect(sent.headers['anthropic-version']).toBeTruthy();
      expect(sent.body).toMatchObject({
        stream: true,
        system: [{ type: 'text', text: 'You are a careful assistant.', cache_control: { type: 'ephemeral' } }],
        tools: [{ name: 'read_file', cache_control: { type: 'ephemeral' } }],
      });
      const body = sent.body as { messages: { content: object[] }[] };
      expect(body.messages.at(-1)!.content.at(-1)).toMatchObject({ cache_control: { type: 'ephemeral' } });
      expect(await historyText(run.handle)).not.toContain(KEY);
    });
  });

  it('a reply that ends within the first send window costs no signal: its stream comes with the result, whole and in order', async () => {
    standin.setScenario({
      name: 'quick',
      rules: [{ match: { lastUserContains: 'quick' }, reply: { content: [{ type: 'text', text: 'Reading the next file now.' }], chunkSize: 4 } }],
    });
    await withModelWorker(env, workflowBundle, config(), async (start) => {
      const run = await start({ call: call('a quick one') });
      const outcome = await run.outcome();
      expect(outcome.status).toBe('completed');
      if (outcome.status !== 'completed') return;
      expect(run.subscriber.events.map((event) => event.kind)).toEqual(['start', 'delta', 'stop']);
      expect(textOf(run.subscriber.events)).toBe('Reading the next file now.');
      expect(outcome.result.streamTail?.map((event) => event.kind)).toEqual(['start', 'delta', 'stop']);
      // No signal, so no workflow task for it: four history events fewer for this call.
      expect(await streamSignals(run.handle)).toBe(0);
    });
  });

  it('puts its text in heartbeats only while someone reads the workflow: unread, the server gets no heartbeat from its stream', async () => {
    // The heartbeat clock far away, so every heartbeat seen is the stream's. Each call streams
    // four pieces of text and then stalls, held there until the stream-idle timer gives it up
    // and attempt 2 answers whole: what the server holds is read while the call is stalled
    // after its text, however slow the machine (a call that streamed for ~1 s under a 50 ms
    // poll was sampled 5 times at load 30, and the test wanted more than 5).
    const text = 'Ten pieces of text, slowly, for whoever reads them now. '.repeat(2);
    const stallsAfterText = {
      name: 'read',
      rules: [
        { times: 1, reply: { chunkSize: 12, content: [{ type: 'text' as const, text }] }, fault: { kind: 'hang' as const, afterEvents: 6 } },
        { reply: { chunkSize: 12, content: [{ type: 'text' as const, text }] } },
      ],
    };
    /** The running call's attempt and the live text of the last heartbeat the server holds (null: none); null when no call runs. */
    const pendingCall = async (handle: { describe(): Promise<{ raw: { pendingActivities?: { attempt?: number | null; heartbeatDetails?: { payloads?: unknown[] | null } | null }[] | null } }> }) => {
      const pending = (await handle.describe()).raw.pendingActivities?.[0];
      if (!pending) return null;
      const payload = pending.heartbeatDetails?.payloads?.[0];
      const details = payload ? defaultPayloadConverter.fromPayload<{ live?: { blocks: Array<{ tail: string }> } }>(payload) : null;
      return { attempt: pending.attempt ?? 0, live: details === null ? null : (details.live?.blocks[0]?.tail ?? '') };
    };
    // No heartbeat at all from the unread call: the server's heartbeat timeout must outlast the stall.
    const options = { heartbeatTimeout: '5 minutes', retry: FAST_RETRY };
    try {
      await withModelWorker(env, workflowBundle, { ...config(), heartbeatIntervalMs: 60_000, streamIdleTimeoutMs: 5_000 }, async (start) => {
        // Nobody reads: the deltas reach the stream by signal, the server holds no heartbeat.
        standin.setScenario(stallsAfterText);
        const unread = await start({ call: call('unread'), options });
        // The activity heartbeats (when read) at a delta, before it publishes that delta: once the
        // subscriber has the text by signal, a heartbeat with it would be on the server.
        await unread.subscriber.waitFor((events) => textOf(events, 1).length > 0, 60_000);
        const seen = [await pendingCall(unread.handle), await pendingCall(unread.handle), await pendingCall(unread.handle)];
        expect(seen.some((sample) => sample?.attempt === 1)).toBe(true);
        expect(seen.every((sample) => sample === null || sample.live === null)).toBe(true);
        const done = await unread.outcome();
        expect(done).toMatchObject({ status: 'completed', result: { attempt: 2 } });
        expect(textOf(unread.subscriber.events, 2)).toBe(text);

        // Read (what the `keel.stream` query's sink tells the worker, at a reader's pace): the text is on the server while it streams.
        standin.setScenario(stallsAfterText);
        const read = await start({ call: call('read'), options });
        const live = await waitUntil(
          async () => {
            noteReader(read.handle.workflowId);
            return pendingCall(read.handle);
          },
          (sample) => sample?.live?.startsWith('Ten pieces') === true,
          60_000,
          'the live text in a heartbeat',
        );
        expect(live).toMatchObject({ attempt: 1 });
        // Sooner than the call's end: the stream has not ended yet.
        expect(read.subscriber.events.some((event) => event.kind === 'stop')).toBe(false);
        expect((await read.outcome()).status).toBe('completed');
      });
    } finally {
      forgetReaders();
    }
  });

  it('returns tool_use blocks with the input reassembled from its JSON fragments', async () => {
    const input = { path: 'src/index.ts', range: { from: 1, to: 40 }, note: 'naïve “quotes” and \\ backslashes' };
    standin.setScenario({
      name: 'tool',
      // A model the API knows but the price table does not.
      models: ['claude-unreleased-9'],
      rules: [
        {
          match: { toolsOffered: ['read_file'] },
          reply: {
            chunkSize: 5,
            content: [
              { type: 'text', text: 'Reading it.' },
              { type: 'tool_use', id: 'toolu_01TestReadFile', name: 'read_file', input },
            ],
          },
        },
      ],
    });
    const tools = [{ name: 'read_file', description: 'Read a file', input_schema: { type: 'object' as const, properties: {} } }];
    await withModelWorker(env, workflowBundle, config(), async (start) => {
      const run = await start({ call: call('open the entry point', { tools, model: 'claude-unreleased-9' }) });
      const outcome = await run.outcome();
      expect(outcome.status).toBe('completed');
      if (outcome.status !== 'completed') return;
      expect(outcome.result.stopReason).toBe('tool_use');
      expect(outcome.result.message.content).toEqual([
        { type: 'text', text: 'Reading it.' },
        { type: 'tool_use', id: 'toolu_01TestReadFile', name: 'read_file', input },
      ]);
      // A model missing from the price table costs "unknown", never zero.
      expect(outcome.result.cost).toBeNull();
      expect(textOf(run.subscriber.events)).toBe('Reading it.');
    });
  });

  it('treats max_tokens as a result, not an error', async () => {
    standin.setScenario({
      rules: [{ reply: { content: [{ type: 'text', text: 'This answer is cut' }], stopReason: 'max_tokens' } }],
    });
    await withModelWorker(env, workflowBundle, config(), async (start) => {
      const outcome = await (await start({ call: call('write a long essay') })).outcome();
      expect(outcome.status).toBe('completed');
      if (outcome.status === 'completed') expect(outcome.result.stopReason).toBe('max_tokens');
    });
  });

  it('fails at once on a 400, non-retryable, with the API message and request id', async () => {
    standin.setScenario({
      rules: [{ fault: { kind: 'status', status: 400, message: 'messages.0.content: text content blocks must be non-empty' } }],
    });
    await withModelWorker(env, workflowBundle, config(), async (start) => {
      const before = standin.requests.length;
      const outcome = await (await start({ call: call('hello'), options: { retry: FAST_RETRY } })).outcome();
      expect(outcome.status).toBe('failed');
      if (outcome.status !== 'failed') return;
      const sent = standin.requests.slice(before);
      expect(sent).toHaveLength(1);
      expect(outcome.failure.type).toBe(MODEL_FAILURE.badRequest);
      expect(outcome.failure.nonRetryable).toBe(true);
      expect(outcome.failure.message).toContain('messages.0.content: text content blocks must be non-empty');
      expect(outcome.failure.message).toContain(sent[0]!.requestId);
      expect(outcome.failure.details[0]).toMatchObject({ status: 400, errorType: 'invalid_request_error', requestId: sent[0]!.requestId });
    });
  });

  it('fails with a clear, non-retryable error when the key is missing, without calling the API', async () => {
    standin.setScenario({ rules: [{ reply: { content: [{ type: 'text', text: 'unreachable' }] } }] });
    await withModelWorker(env, workflowBundle, { env: { ANTHROPIC_BASE_URL: standin.url } }, async (start) => {
      const before = standin.requests.length;
      const outcome = await (await start({ call: call('hello') })).outcome();
      expect(outcome).toMatchObject({ status: 'failed', failure: { type: MODEL_FAILURE.apiKeyMissing, nonRetryable: true } });
      if (outcome.status === 'failed') expect(outcome.failure.message).toContain('ANTHROPIC_API_KEY is not set');
      expect(standin.requests.length).toBe(before);
    });
  });

  it('fails with a clear, non-retryable error on a bad key, and the key appears nowhere', async () => {
    const badKey = 'sk-ant-wrong-2b8e44d10c';
    standin.setScenario({ apiKeys: [KEY], rules: [{ reply: { content: [{ type: 'text', text: 'unreachable' }] } }] });
    await withModelWorker(env, workflowBundle, { env: { ANTHROPIC_API_KEY: badKey, ANTHROPIC_BASE_URL: standin.url } }, async (start) => {
      const before = standin.requests.length;
      const run = await start({ call: call('hello'), options: { retry: FAST_RETRY } });
      const outcome = await run.outcome();
      expect(outcome).toMatchObject({ status: 'failed', failure: { type: MODEL_FAILURE.authentication, nonRetryable: true } });
      if (outcome.status === 'failed') {
        expect(outcome.failure.message).toMatch(/^401 authentication_error: Invalid bearer token \(request-id req_\w+\)/);
        expect(outcome.failure.message).toContain('Check ANTHROPIC_API_KEY');
      }
      expect(standin.requests.length - before).toBe(1);
      expect(JSON.stringify(standin.requests)).not.toContain(badKey);
      expect(await historyText(run.handle)).not.toContain(badKey);
    });
  });

  it('answers an unscripted request with a clear error instead of an invented reply', async () => {
    standin.setScenario({ name: 'narrow', rules: [{ match: { lastUserContains: 'weather' }, reply: { content: [{ type: 'text', text: 'sunny' }] } }] });
    await withModelWorker(env, workflowBundle, config(), async (start) => {
      const outcome = await (await start({ call: call('tell me a joke'), options: { retry: FAST_RETRY } })).outcome();
      expect(outcome).toMatchObject({ status: 'failed', failure: { type: MODEL_FAILURE.server, nonRetryable: true } });
      if (outcome.status === 'failed') {
        expect(outcome.failure.message).toContain('no rule in scenario "narrow" matches');
        expect(outcome.failure.message).toContain('"tell me a joke"');
      }
      expect(standin.unmatched).toHaveLength(1);
    });
  });

  it('shows the connection state in its heartbeats, then closes the connection soon after an interrupt, long before the answer would end', async () => {
    standin.setScenario({
      rules: [{ reply: { delayMs: 100, chunkSize: 4, content: [{ type: 'text', text: 'A slow and very long answer. '.repeat(40) }] } }],
    });
    await withModelWorker(env, workflowBundle, config(), async (start) => {
      const run = await start({ call: call('talk slowly') });
      await run.subscriber.waitFor((events) => textOf(events).length > 0);
      const sent = standin.requests.at(-1)!;
      expect(sent.closedAt).toBeNull();

      // What `temporal workflow describe` shows for the running call.
      let heartbeat: ModelCallHeartbeat | undefined;
      for (let tries = 0; tries < 50 && !(heartbeat?.stream.status === 'streaming' && heartbeat.stream.bytes > 0); tries++) {
        const pending = (await run.handle.describe()).raw.pendingActivities?.[0];
        const payload = pending?.heartbeatDetails?.payloads?.[0];
        heartbeat = payload ? defaultPayloadConverter.fromPayload<ModelCallHeartbeat>(payload) : undefined;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      // `stream` is the stream machine's state (machines/stream.ts), as it is.
      expect(heartbeat).toMatchObject({ stream: { status: 'streaming', attempt: 1, maxAttempts: 1 }, attempt: 1, requestId: sent.requestId });
      const streaming = heartbeat!.stream as Extract<StreamState, { status: 'streaming' }>;
      expect(streaming.bytes).toBeGreaterThan(0);
      expect(streaming.totalBytes).toBe(streaming.bytes);
      expect(streamMachine.fromJSON(heartbeat!.stream)).toEqual(heartbeat!.stream);
      expect(JSON.stringify(heartbeat)).not.toContain(KEY);

      const interruptedAt = Date.now();
      await run.handle.signal(interruptSignal);
      const closed = await standin.waitFor((request) => request.seq === sent.seq && request.closedAt !== null, 60_000);
      expect(closed.clientClosedEarly).toBe(true);
      const closedAfterMs = closed.closedAt! - interruptedAt;
      console.log(`connection closed ${closedAfterMs} ms after the interrupt`);
      // Under a second on an idle machine (a cancel rides the next heartbeat's answer); the
      // bound is loose for a busy one, and still far below the ~30 s the answer streams for.
      expect(closedAfterMs).toBeLessThan(10_000);

      expect(await run.outcome()).toEqual({ status: 'cancelled' });
      // No tokens of the interrupted answer arrive after the cancel was confirmed.
      expect(run.subscriber.events.some((event) => event.kind === 'stop')).toBe(false);
    });
  });

  it('heartbeats carry the stream machine’s state: connecting before the headers, connected before the first byte', async () => {
    /** The running call's heartbeat details once `ok` holds (what `temporal workflow describe` shows). */
    async function heartbeatWhen(handle: { describe(): Promise<{ raw: { pendingActivities?: { heartbeatDetails?: { payloads?: unknown[] | null } | null }[] | null } }> }, ok: (h: ModelCallHeartbeat) => boolean) {
      let heartbeat: ModelCallHeartbeat | undefined;
      for (let tries = 0; tries < 60 && !(heartbeat && ok(heartbeat)); tries++) {
        const payload = (await handle.describe()).raw.pendingActivities?.[0]?.heartbeatDetails?.payloads?.[0];
        heartbeat = payload ? defaultPayloadConverter.fromPayload<ModelCallHeartbeat>(payload) : undefined;
        if (!(heartbeat && ok(heartbeat))) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return heartbeat;
    }
    const reply = { content: [{ type: 'text' as const, text: 'never sent' }] };
    for (const [fault, status] of [
      [{ kind: 'hang' as const }, 'connecting'],
      [{ kind: 'hang' as const, afterEvents: 0 }, 'connected'],
    ] as const) {
      standin.setScenario({ rules: [{ reply, fault }] });
      await withModelWorker(env, workflowBundle, config(), async (start) => {
        const run = await start({ call: call(`hang for ${status}`) });
        const heartbeat = await heartbeatWhen(run.handle, (h) => h.stream.status === status);
        expect(heartbeat?.stream).toEqual({ status, attempt: 1, maxAttempts: 1, totalBytes: 0 });
        expect(streamMachine.fromJSON(heartbeat!.stream)).toEqual(heartbeat!.stream);
        await run.handle.signal(interruptSignal);
        expect(await run.outcome()).toEqual({ status: 'cancelled' });
      });
    }
  });
});
