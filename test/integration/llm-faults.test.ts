// Faults the model provider throws at a running agent, injected by the stand-in and
// handled by the real activity under a real Temporal retry policy.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODEL_FAILURE, type ModelCallInput, type ModelStreamEvent } from '../../activities/llm';
import { type Standin, startStandin } from '../../standin/server';
import { FAST_RETRY, withModelWorker } from '../fixtures/llm-harness';
import { useTemporal } from '../fixtures/use-temporal';

const here = path.dirname(fileURLToPath(import.meta.url));

const { env, workflowBundle } = useTemporal({ workflows: path.join(here, '../fixtures/llm-workflow.ts') });
let standin: Standin;

beforeAll(async () => {
  standin = await startStandin({ scenario: { rules: [] } });
});
afterAll(async () => {
  await standin?.close();
});

const config = (extra: { streamIdleTimeoutMs?: number; requestTimeoutMs?: number } = {}) => ({
  env: { ANTHROPIC_API_KEY: 'sk-ant-test-faults', ANTHROPIC_BASE_URL: standin.url },
  ...extra,
});

const call: ModelCallInput = {
  model: 'claude-haiku-4-5',
  maxTokens: 512,
  conversation: { kind: 'inline', messages: [{ role: 'user', content: 'status report, please' }] },
};

const FINAL = 'All systems nominal.';
const finalReply = { reply: { content: [{ type: 'text' as const, text: FINAL }] } };

/** The failure type of the attempt before the one that completed, as history records it. */
async function previousAttemptFailure(handle: { fetchHistory(): Promise<{ events?: unknown[] | null }> }): Promise<unknown> {
  const history = await handle.fetchHistory();
  const started = (history.events ?? [])
    .map((event) => (event as { activityTaskStartedEventAttributes?: { lastFailure?: Record<string, unknown> } }).activityTaskStartedEventAttributes)
    .find((attributes) => attributes !== undefined && attributes !== null);
  const failure = started?.lastFailure;
  return (failure?.applicationFailureInfo as { type?: string } | undefined)?.type ?? (failure?.timeoutFailureInfo ? 'timeout' : null);
}

const attemptsSeen = (events: ModelStreamEvent[]) => events.filter((event) => event.kind === 'retry').map((event) => event.attempt);

describe('model activity under provider faults', () => {
  it('retries 529 twice and succeeds on attempt 3, waiting at least the retry-after each time', async () => {
    standin.setScenario({
      rules: [
        { times: 1, fault: { kind: 'status', status: 529, retryAfter: 1 } },
        { times: 1, fault: { kind: 'status', status: 529, retryAfterMs: 800 } },
        finalReply,
      ],
    });
    await withModelWorker(env, workflowBundle, config(), async (start) => {
      const before = standin.requests.length;
      const run = await start({ call, options: { retry: FAST_RETRY } });
      const outcome = await run.outcome();
      expect(outcome.status).toBe('completed');
      if (outcome.status !== 'completed') return;
      expect(outcome.result.attempt).toBe(3);
      expect(outcome.result.message.content).toEqual([{ type: 'text', text: FINAL }]);

      const [first, second, third] = standin.requests.slice(before);
      // The policy's own interval is 100 ms: only the API's retry-after explains these gaps.
      const gaps = [second!.receivedAt - first!.receivedAt, third!.receivedAt - second!.receivedAt];
      console.log(`gaps between attempts: ${gaps.join(' ms, ')} ms (retry-after 1 s, then retry-after-ms 800)`);
      expect(gaps[0]).toBeGreaterThanOrEqual(1000);
      expect(gaps[1]).toBeGreaterThanOrEqual(800);
      expect(await previousAttemptFailure(run.handle)).toBe(MODEL_FAILURE.overloaded);
      expect(attemptsSeen(run.subscriber.events)).toEqual([2, 3]);
    });
  });

  it('gives up after the policy\'s attempts: retries are bounded', async () => {
    standin.setScenario({ rules: [{ fault: { kind: 'status', status: 529, retryAfterMs: 50 } }] });
    await withModelWorker(env, workflowBundle, config(), async (start) => {
      const before = standin.requests.length;
      const outcome = await (await start({ call, options: { retry: { ...FAST_RETRY, maximumAttempts: 3 } } })).outcome();
      expect(outcome).toMatchObject({ status: 'failed', failure: { type: MODEL_FAILURE.overloaded, nonRetryable: false } });
      expect(standin.requests.length - before).toBe(3);
    });
  });

  it('does not retry when the server says x-should-retry: false', async () => {
    standin.setScenario({ rules: [{ fault: { kind: 'status', status: 503, shouldRetry: false, message: 'maintenance' } }] });
    await withModelWorker(env, workflowBundle, config(), async (start) => {
      const before = standin.requests.length;
      const outcome = await (await start({ call, options: { retry: FAST_RETRY } })).outcome();
      expect(outcome).toMatchObject({ status: 'failed', failure: { type: MODEL_FAILURE.server, nonRetryable: true } });
      expect(standin.requests.length - before).toBe(1);
    });
  });

  it('retries an in-stream overloaded_error', async () => {
    standin.setScenario({
      rules: [
        { times: 1, reply: { content: [{ type: 'text', text: 'Partial output that ' }] }, fault: { kind: 'stream_error', afterEvents: 3, errorType: 'overloaded_error' } },
        finalReply,
      ],
    });
    await withModelWorker(env, workflowBundle, config(), async (start) => {
      const run = await start({ call, options: { retry: FAST_RETRY } });
      const outcome = await run.outcome();
      expect(outcome).toMatchObject({ status: 'completed', result: { attempt: 2 } });
      expect(await previousAttemptFailure(run.handle)).toBe(MODEL_FAILURE.overloaded);
    });
  });

  it('retries after the socket drops mid-stream, and the subscriber sees the retry marker', async () => {
    standin.setScenario({
      rules: [
        {
          times: 1,
          reply: { delayMs: 40, chunkSize: 3, content: [{ type: 'text', text: 'This first attempt will be cut off somewhere in the middle.' }] },
          fault: { kind: 'drop', afterEvents: 12 },
        },
        finalReply,
      ],
    });
    await withModelWorker(env, workflowBundle, config(), async (start) => {
      const before = standin.requests.length;
      const run = await start({ call, options: { retry: FAST_RETRY } });
      const outcome = await run.outcome();
      expect(outcome).toMatchObject({ status: 'completed', result: { attempt: 2 } });
      expect(standin.requests.slice(before).map((request) => request.outcome)).toEqual(['dropped', 'completed']);
      expect(await previousAttemptFailure(run.handle)).toBe(MODEL_FAILURE.streamDropped);

      const events = run.subscriber.events;
      const retryAt = events.findIndex((event) => event.kind === 'retry');
      expect(retryAt).toBeGreaterThan(0);
      expect(events[retryAt]).toMatchObject({ kind: 'retry', attempt: 2 });
      // Partial text of attempt 1 came before the marker; consumers reset on it.
      expect(events.slice(0, retryAt).some((event) => event.kind === 'delta' && event.attempt === 1)).toBe(true);
      expect(events.slice(retryAt + 1).every((event) => event.attempt === 2)).toBe(true);
      const text = events.slice(retryAt).flatMap((event) => (event.kind === 'delta' ? [event.text] : []));
      expect(text.join('')).toBe(FINAL);
    });
  });

  it('never sends the same request again after malformed JSON in the stream (retry table: malformed)', async () => {
    standin.setScenario({
      rules: [{ times: 1, reply: { content: [{ type: 'text', text: 'garbled' }] }, fault: { kind: 'malformed_json', afterEvents: 2 } }, finalReply],
    });
    const before = standin.requests.length;
    await withModelWorker(env, workflowBundle, config(), async (start) => {
      const run = await start({ call, options: { retry: FAST_RETRY } });
      expect(await run.outcome()).toMatchObject({ status: 'failed', failure: { type: MODEL_FAILURE.malformedResponse, nonRetryable: true } });
      expect(standin.requests.length - before).toBe(1);
    });
  });

  it('times out a request that hangs before any response and retries it', async () => {
    standin.setScenario({ rules: [{ times: 1, fault: { kind: 'hang' } }, finalReply] });
    // The SDK's request timeout (1 s) far below start-to-close (5 minutes): the request hangs
    // for good, so only the SDK can end it, and Temporal's own timeout cannot win the race on
    // a busy machine (start-to-close 3 s, SDK 2 s, came back `timeout` at load 30).
    // How start-to-close lowers the SDK's timeout is sdkTimeoutMs's unit test.
    await withModelWorker(env, workflowBundle, config({ requestTimeoutMs: 1_000 }), async (start) => {
      const before = standin.requests.length;
      const run = await start({ call, options: { startToCloseTimeout: '5 minutes', retry: FAST_RETRY } });
      const outcome = await run.outcome();
      expect(outcome).toMatchObject({ status: 'completed', result: { attempt: 2 } });
      const [hung] = standin.requests.slice(before);
      // The activity gave up on the hanging request and closed its connection.
      expect(hung).toMatchObject({ outcome: 'client_closed', clientClosedEarly: true });
      expect(await previousAttemptFailure(run.handle)).toBe(MODEL_FAILURE.timeout);
    });
  });

  it('abandons a stream that stalls mid-answer and retries it', async () => {
    standin.setScenario({
      rules: [{ times: 1, reply: { content: [{ type: 'text', text: 'I was saying that' }] }, fault: { kind: 'hang', afterEvents: 3 } }, finalReply],
    });
    await withModelWorker(env, workflowBundle, config({ streamIdleTimeoutMs: 1000 }), async (start) => {
      const before = standin.requests.length;
      const run = await start({ call, options: { retry: FAST_RETRY } });
      const outcome = await run.outcome();
      expect(outcome).toMatchObject({ status: 'completed', result: { attempt: 2 } });
      expect(standin.requests[before]).toMatchObject({ clientClosedEarly: true });
      expect(await previousAttemptFailure(run.handle)).toBe(MODEL_FAILURE.streamStalled);
    });
  });
});
