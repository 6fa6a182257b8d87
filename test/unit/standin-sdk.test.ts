// The unmodified `@anthropic-ai/sdk` against the stand-in: it parses every reply and
// every error as it would the real API's, and its own retry logic reads our headers.
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Standin, startStandin } from '../../standin/server';

let standin: Standin;
let client: Anthropic;

beforeAll(async () => {
  standin = await startStandin({ scenario: { rules: [] } });
  client = new Anthropic({ apiKey: 'sk-ant-sdk-test', baseURL: standin.url, maxRetries: 0 });
});

afterAll(async () => {
  await standin?.close();
});

const model = 'claude-sonnet-4-6';
const ask = (text: string) => ({ model, max_tokens: 512, messages: [{ role: 'user' as const, content: text }] });
const content = [
  { type: 'thinking' as const, thinking: 'Plan: read, then answer.', signature: 'EqMBCkgIAxABGAIiQDm-opaque' },
  { type: 'text' as const, text: 'Reading src/main.ts for you.' },
  { type: 'tool_use' as const, id: 'toolu_01Sdk', name: 'read_file', input: { path: 'src/main.ts', limit: 200 } },
];

describe('the Anthropic SDK cannot tell the stand-in from the API', () => {
  it('streams with MessageStream: events, text and the final message', async () => {
    standin.setScenario({ rules: [{ reply: { content, chunkSize: 5 } }] });
    const stream = client.messages.stream(ask('open main'));
    let text = '';
    let thinking = '';
    let json = '';
    stream.on('text', (delta) => (text += delta));
    stream.on('thinking', (delta) => (thinking += delta));
    stream.on('inputJson', (delta) => (json += delta));
    const message = await stream.finalMessage();
    expect(message.content).toEqual(content);
    expect(message.stop_reason).toBe('tool_use');
    expect(text).toBe('Reading src/main.ts for you.');
    expect(thinking).toBe('Plan: read, then answer.');
    expect(JSON.parse(json)).toEqual({ path: 'src/main.ts', limit: 200 });
    expect(stream.request_id).toBe(standin.requests.at(-1)?.requestId);
    // SDK 1.x authenticates with a bearer token and sends its own API version.
    expect(standin.requests.at(-1)?.auth).toBe('bearer');
    expect(standin.requests.at(-1)?.headers['anthropic-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });

  it('parses a non-streamed Message and its request id', async () => {
    standin.setScenario({ rules: [{ reply: { content: [{ type: 'text', text: 'Plain answer.' }], usage: { input_tokens: 9, output_tokens: 3 } } }] });
    const { data, request_id } = await client.messages.create(ask('hi')).withResponse();
    expect(data.content).toEqual([{ type: 'text', text: 'Plain answer.' }]);
    expect(data.usage).toMatchObject({ input_tokens: 9, output_tokens: 3, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
    expect(request_id).toMatch(/^req_/);
  });

  it('raises the typed error classes with status, type, message and request id', async () => {
    standin.setScenario({ rules: [{ fault: { kind: 'status', status: 429, retryAfter: 7, message: 'rate limited, wait' } }] });
    const error = await client.messages.create(ask('hi')).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.RateLimitError);
    const rateLimit = error as InstanceType<typeof Anthropic.RateLimitError>;
    expect(rateLimit.status).toBe(429);
    expect(rateLimit.type).toBe('rate_limit_error');
    expect(rateLimit.apiMessage).toBe('rate limited, wait');
    expect(rateLimit.requestID).toBe(standin.requests.at(-1)?.requestId);
    expect(rateLimit.headers.get('retry-after')).toBe('7');

    standin.setScenario({ rules: [{ fault: { kind: 'status', status: 529 } }] });
    expect(await client.messages.create(ask('hi')).catch((caught: unknown) => caught)).toBeInstanceOf(Anthropic.APIError);
    standin.setScenario({ rules: [{ fault: { kind: 'status', status: 401 } }] });
    expect(await client.messages.create(ask('hi')).catch((caught: unknown) => caught)).toBeInstanceOf(Anthropic.AuthenticationError);
  });

  it('surfaces an in-stream error event as an APIError of that type', async () => {
    standin.setScenario({ rules: [{ reply: { content: [{ type: 'text', text: 'partial' }] }, fault: { kind: 'stream_error', afterEvents: 3, errorType: 'api_error' } }] });
    const error = await client.messages.stream(ask('hi')).finalMessage().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    expect((error as InstanceType<typeof Anthropic.APIError>).type).toBe('api_error');
  });

  it("drives the SDK's own retries with retry-after-ms (when the SDK is allowed to retry)", async () => {
    standin.setScenario({
      rules: [{ times: 2, fault: { kind: 'status', status: 529, retryAfterMs: 300 } }, { reply: { content: [{ type: 'text', text: 'third time' }] } }],
    });
    const retrying = new Anthropic({ apiKey: 'sk-ant-sdk-test', baseURL: standin.url, maxRetries: 2 });
    const before = standin.requests.length;
    const message = await retrying.messages.create(ask('hi'));
    expect(message.content).toEqual([{ type: 'text', text: 'third time' }]);
    const times = standin.requests.slice(before).map((request) => request.receivedAt);
    expect(times).toHaveLength(3);
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(300);
    // The SDK numbers its retries in a header: the stand-in saw attempts 0, 1, 2.
    expect(standin.requests.slice(before).map((request) => request.headers['x-stainless-retry-count'])).toEqual(['0', '1', '2']);
  });
});
