// Failure classification, fed with the errors the real SDK raises against the stand-in.
import Anthropic from '@anthropic-ai/sdk';
import { ApplicationFailure } from '@temporalio/activity';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyModelError, MODEL_FAILURE, retryAfterMs } from '../../activities/llm-errors';
import type { Fault } from '../../standin/scenario';
import { type Standin, startStandin } from '../../standin/server';

let standin: Standin;
let client: Anthropic;

beforeAll(async () => {
  standin = await startStandin({ scenario: { rules: [] } });
  // The SDK's timeout only for the request that hangs for good (failureFor's `timeoutMs`): an
  // answer a busy machine took over a second to give came back as a timeout.
  client = new Anthropic({ apiKey: 'sk-ant-errors', baseURL: standin.url, maxRetries: 0, timeout: 60_000 });
});

afterAll(async () => {
  await standin?.close();
});

const ask = { model: 'claude-haiku-4-5', max_tokens: 64, messages: [{ role: 'user' as const, content: 'hi' }] };

async function failureFor(fault: Fault | { kind: 'status'; status: number; retryAfter?: number; retryAfterMs?: number; shouldRetry?: boolean }, timeoutMs?: number): Promise<ApplicationFailure> {
  standin.setScenario({ rules: [{ reply: { content: [{ type: 'text', text: 'partial answer here' }], chunkSize: 3 }, fault }] });
  const error = await (async () => {
    const stream = await client.messages.create({ ...ask, stream: true }, timeoutMs === undefined ? {} : { timeout: timeoutMs });
    for await (const _event of stream) {
      // drain
    }
  })().catch((caught: unknown) => caught);
  expect(error).toBeDefined();
  return classifyModelError(error);
}

describe('classifyModelError', () => {
  const table: Array<[number, string, boolean]> = [
    [400, MODEL_FAILURE.badRequest, false],
    [401, MODEL_FAILURE.authentication, false],
    [402, MODEL_FAILURE.billing, false],
    [403, MODEL_FAILURE.permission, false],
    [404, MODEL_FAILURE.notFound, false],
    [408, MODEL_FAILURE.requestTimeout, true],
    [409, MODEL_FAILURE.conflict, true],
    [413, MODEL_FAILURE.requestTooLarge, false],
    [422, MODEL_FAILURE.unprocessable, false],
    [429, MODEL_FAILURE.rateLimited, true],
    [500, MODEL_FAILURE.server, true],
    [503, MODEL_FAILURE.server, true],
    [529, MODEL_FAILURE.overloaded, true],
  ];
  it.each(table)('HTTP %i → %s (retryable: %s)', async (status, type, retryable) => {
    const failure = await failureFor({ kind: 'status', status });
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure.type).toBe(type);
    expect(failure.nonRetryable).toBe(!retryable);
    expect(failure.message).toContain(`${status} `);
    expect(failure.message).toContain(standin.requests.at(-1)!.requestId);
  });

  it('sets nextRetryDelay from retry-after-ms, else retry-after, on 429 and 529', async () => {
    expect((await failureFor({ kind: 'status', status: 429, retryAfterMs: 1500, retryAfter: 9 })).nextRetryDelay).toBe(1500);
    expect((await failureFor({ kind: 'status', status: 529, retryAfter: 2 })).nextRetryDelay).toBe(2000);
    expect((await failureFor({ kind: 'status', status: 529 })).nextRetryDelay).toBeUndefined();
  });

  it('obeys x-should-retry either way', async () => {
    expect((await failureFor({ kind: 'status', status: 529, shouldRetry: false })).nonRetryable).toBe(true);
    expect((await failureFor({ kind: 'status', status: 400, shouldRetry: true })).nonRetryable).toBe(false);
  });

  it('retries in-stream overloaded_error and api_error, not an in-stream invalid_request_error', async () => {
    const overloaded = await failureFor({ kind: 'stream_error', afterEvents: 3, errorType: 'overloaded_error' });
    expect(overloaded).toMatchObject({ type: MODEL_FAILURE.overloaded, nonRetryable: false });
    expect(overloaded.details?.[0]).toMatchObject({ inStream: true, errorType: 'overloaded_error', status: null });
    expect(await failureFor({ kind: 'stream_error', afterEvents: 3, errorType: 'api_error' })).toMatchObject({ type: MODEL_FAILURE.server, nonRetryable: false });
    expect(await failureFor({ kind: 'stream_error', afterEvents: 3, errorType: 'invalid_request_error' })).toMatchObject({
      type: MODEL_FAILURE.badRequest,
      nonRetryable: true,
    });
  });

  it('never retries malformed output as the same request (retry table: malformed)', async () => {
    expect(await failureFor({ kind: 'malformed_json', afterEvents: 2 })).toMatchObject({
      type: MODEL_FAILURE.malformedResponse,
      nonRetryable: true,
      details: [expect.objectContaining({ failureClass: 'malformed' })],
    });
  });

  it('retries a socket dropped mid-stream, a timeout and a refused connection', async () => {
    expect(await failureFor({ kind: 'drop', afterEvents: 4 })).toMatchObject({ type: MODEL_FAILURE.streamDropped, nonRetryable: false });
    expect(await failureFor({ kind: 'hang' }, 1_000)).toMatchObject({ type: MODEL_FAILURE.timeout, nonRetryable: false });

    const closed = await startStandin({ scenario: { rules: [] } });
    const url = closed.url;
    await closed.close();
    const refused = await new Anthropic({ apiKey: 'k', baseURL: url, maxRetries: 0 }).messages.create(ask).catch((caught: unknown) => caught);
    expect(classifyModelError(refused)).toMatchObject({ type: MODEL_FAILURE.connection, nonRetryable: false });
  });

  it('does not retry local SDK errors', () => {
    expect(classifyModelError(new Anthropic.AnthropicError('bad option'))).toMatchObject({ type: MODEL_FAILURE.client, nonRetryable: true });
  });
});

describe('retryAfterMs', () => {
  it('prefers retry-after-ms, reads seconds and HTTP dates, ignores nonsense', () => {
    const now = Date.parse('2026-11-21T12:00:00Z');
    expect(retryAfterMs(new Headers({ 'retry-after-ms': '250', 'retry-after': '9' }), now)).toBe(250);
    expect(retryAfterMs(new Headers({ 'retry-after': '1.5' }), now)).toBe(1500);
    expect(retryAfterMs(new Headers({ 'retry-after': 'Sat, 21 Nov 2026 12:00:30 GMT' }), now)).toBe(30_000);
    expect(retryAfterMs(new Headers({ 'retry-after': 'soon' }), now)).toBeNull();
    expect(retryAfterMs(new Headers({ 'retry-after': '0' }), now)).toBeNull();
    expect(retryAfterMs(null)).toBeNull();
  });
});
