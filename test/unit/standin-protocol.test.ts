// The stand-in's wire protocol, read with plain `fetch`: what the real Messages API
// sends, byte for byte where it matters (headers, error bodies, SSE order and shapes).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScenarioInput } from '../../standin/scenario';
import { type Standin, startStandin } from '../../standin/server';

let standin: Standin;

beforeAll(async () => {
  standin = await startStandin({ scenario: { rules: [] } });
});

afterAll(async () => {
  await standin?.close();
});

const VERSION = { 'anthropic-version': '2023-06-01' };
const AUTH = { authorization: 'Bearer sk-ant-unit' };

function post(body: unknown, headers: Record<string, string> = { ...AUTH, ...VERSION }): Promise<Response> {
  return fetch(`${standin.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

const request = (text: string, extra: Record<string, unknown> = {}) => ({
  model: 'claude-sonnet-4-6',
  max_tokens: 256,
  messages: [{ role: 'user', content: text }],
  ...extra,
});

function scenario(input: ScenarioInput): void {
  standin.setScenario(input);
}

interface SseData {
  type: string;
  index?: number;
  delta?: Record<string, unknown>;
  message?: Record<string, unknown>;
  content_block?: unknown;
}

interface Frame {
  event: string;
  data: string;
}

function frames(text: string): Frame[] {
  return text
    .split('\n\n')
    .filter((chunk) => chunk.trim() !== '')
    .map((chunk) => {
      const event = /^event: (.*)$/m.exec(chunk)?.[1] ?? '';
      const data = /^data: (.*)$/m.exec(chunk)?.[1] ?? '';
      return { event, data };
    });
}

async function expectApiError(response: Response, status: number, type: string, message?: string) {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toContain('application/json');
  const requestId = response.headers.get('request-id');
  expect(requestId).toMatch(/^req_\w{20,}$/);
  const body = (await response.json()) as { type: string; error: { type: string; message: string }; request_id: string };
  expect(body.type).toBe('error');
  expect(body.request_id).toBe(requestId);
  expect(body.error.type).toBe(type);
  if (message !== undefined) expect(body.error.message).toBe(message);
  else expect(body.error.message.length).toBeGreaterThan(0);
  expect(Object.keys(body).sort()).toEqual(['error', 'request_id', 'type']);
}

describe('stand-in: authentication, version and request checks', () => {
  it('answers 401 authentication_error without a key, with request-id', async () => {
    scenario({ rules: [{ reply: { content: [{ type: 'text', text: 'hi' }] } }] });
    await expectApiError(await post(request('hi'), { ...VERSION }), 401, 'authentication_error', 'x-api-key header is required');
  });

  it('accepts Authorization: Bearer (SDK 1.x) and x-api-key alike', async () => {
    scenario({ apiKeys: ['sk-ant-unit'], rules: [{ reply: { content: [{ type: 'text', text: 'hi' }] } }] });
    expect((await post(request('hi'), { ...VERSION, authorization: 'Bearer sk-ant-unit' })).status).toBe(200);
    expect((await post(request('hi'), { ...VERSION, 'x-api-key': 'sk-ant-unit' })).status).toBe(200);
    await expectApiError(await post(request('hi'), { ...VERSION, 'x-api-key': 'sk-ant-other' }), 401, 'authentication_error', 'invalid x-api-key');
    const recorded = standin.requests.slice(-3);
    expect(recorded.map((entry) => entry.auth)).toEqual(['bearer', 'x-api-key', 'x-api-key']);
    // Recorded for assertions, never with the key itself.
    expect(JSON.stringify(recorded)).not.toContain('sk-ant-');
    expect(recorded[0]!.headers.authorization).toBe('Bearer [redacted]');
  });

  it('answers 400 without anthropic-version', async () => {
    scenario({ rules: [{ reply: { content: [{ type: 'text', text: 'hi' }] } }] });
    await expectApiError(await post(request('hi'), { ...AUTH }), 400, 'invalid_request_error', 'anthropic-version: header is required');
  });

  it('answers 400 for a body that is not JSON or misses a required field, and 404 elsewhere', async () => {
    await expectApiError(await post('{not json'), 400, 'invalid_request_error');
    await expectApiError(await post({ model: 'm', messages: [{ role: 'user', content: 'x' }] }), 400, 'invalid_request_error', 'max_tokens: Field required');
    const elsewhere = await fetch(`${standin.url}/v1/models`, { headers: { ...AUTH, ...VERSION } });
    await expectApiError(elsewhere, 404, 'not_found_error');
  });

  it('answers a request no rule matches with a clear 500 that says not to retry', async () => {
    scenario({ name: 'only-weather', rules: [{ match: { lastUserContains: 'weather' }, reply: { content: [{ type: 'text', text: 'sun' }] } }] });
    const response = await post(request('a joke please'));
    expect(response.headers.get('x-should-retry')).toBe('false');
    await expectApiError(response, 500, 'api_error');
    expect(standin.unmatched.at(-1)?.facts?.lastUserText).toBe('a joke please');
  });
});

describe('stand-in: error faults', () => {
  const pairs: Array<[number, string]> = [
    [400, 'invalid_request_error'],
    [401, 'authentication_error'],
    [402, 'billing_error'],
    [403, 'permission_error'],
    [404, 'not_found_error'],
    [413, 'request_too_large'],
    [429, 'rate_limit_error'],
    [500, 'api_error'],
    [504, 'timeout_error'],
    [529, 'overloaded_error'],
  ];
  it.each(pairs)('status %i carries error type %s', async (status, type) => {
    scenario({ rules: [{ fault: { kind: 'status', status } }] });
    await expectApiError(await post(request('x')), status, type);
  });

  it('sends retry-after, retry-after-ms and x-should-retry when scripted', async () => {
    scenario({ rules: [{ fault: { kind: 'status', status: 429, retryAfter: 3, retryAfterMs: 2500, shouldRetry: true, message: 'slow down' } }] });
    const response = await post(request('x'));
    expect(response.headers.get('retry-after')).toBe('3');
    expect(response.headers.get('retry-after-ms')).toBe('2500');
    expect(response.headers.get('x-should-retry')).toBe('true');
    await expectApiError(response, 429, 'rate_limit_error', 'slow down');
  });
});

describe('stand-in: replies', () => {
  const input = { path: 'a/b.ts', lines: [1, 2, 3], quote: 'say "hi"' };
  const content = [
    { type: 'thinking' as const, thinking: 'Reading the file first.', signature: 'sig-opaque==' },
    { type: 'text' as const, text: 'Let me look.' },
    { type: 'tool_use' as const, id: 'toolu_01Fixed', name: 'read_file', input },
  ];

  it('streams SSE events in the real order and shapes', async () => {
    scenario({ rules: [{ reply: { chunkSize: 4, content, usage: { input_tokens: 50, output_tokens: 20 } } }] });
    const response = await post(request('go', { stream: true }));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(response.headers.get('request-id')).toMatch(/^req_/);
    const events = frames(await response.text());
    const parsed = events.map((frame) => ({ event: frame.event, data: JSON.parse(frame.data) as SseData }));
    for (const { event, data } of parsed) expect(data.type).toBe(event);

    // message_start, then per block start / deltas / stop, a ping after the first start.
    const shape = parsed.map(({ event, data }) =>
      event === 'content_block_delta' ? `delta:${data.index}:${String(data.delta?.type)}` : data.index !== undefined ? `${event}:${data.index}` : event,
    );
    const collapsed = shape.filter((item, index) => item !== shape[index - 1]);
    expect(collapsed).toEqual([
      'message_start',
      'content_block_start:0',
      'ping',
      'delta:0:thinking_delta',
      'delta:0:signature_delta',
      'content_block_stop:0',
      'content_block_start:1',
      'delta:1:text_delta',
      'content_block_stop:1',
      'content_block_start:2',
      'delta:2:input_json_delta',
      'content_block_stop:2',
      'message_delta',
      'message_stop',
    ]);

    const start = parsed[0]!.data.message!;
    expect(start).toMatchObject({ type: 'message', role: 'assistant', model: 'claude-sonnet-4-6', content: [], stop_reason: null, stop_sequence: null });
    expect(start.id).toMatch(/^msg_/);
    expect(start.usage).toMatchObject({ input_tokens: 50, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
    expect(parsed[1]!.data.content_block).toEqual({ type: 'thinking', thinking: '', signature: '' });
    expect(parsed.find(({ data }) => data.index === 2 && data.type === 'content_block_start')!.data.content_block).toEqual({
      type: 'tool_use',
      id: 'toolu_01Fixed',
      name: 'read_file',
      input: {},
    });

    const deltas = (index: number, field: string) =>
      parsed.filter(({ data }) => data.type === 'content_block_delta' && data.index === index).map(({ data }) => data.delta?.[field] as string | undefined);
    const fragments = deltas(2, 'partial_json');
    expect(fragments[0]).toBe('');
    expect(fragments.length).toBeGreaterThan(3);
    expect(JSON.parse(fragments.join(''))).toEqual(input);
    expect(deltas(1, 'text').join('')).toBe('Let me look.');
    expect(deltas(0, 'thinking').filter(Boolean).join('')).toBe('Reading the file first.');
    expect(deltas(0, 'signature').filter(Boolean)).toEqual(['sig-opaque==']);

    const messageDelta = parsed.at(-2)!.data;
    expect(messageDelta).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'tool_use', stop_sequence: null, stop_details: null },
      usage: { input_tokens: 50, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 20 },
    });
  });

  it('answers without stream with a complete Message', async () => {
    scenario({ rules: [{ reply: { content, stopReason: 'tool_use' } }] });
    const response = await post(request('go'));
    expect(response.headers.get('content-type')).toBe('application/json');
    const message = (await response.json()) as { usage: Record<string, unknown> };
    expect(message).toMatchObject({ type: 'message', role: 'assistant', model: 'claude-sonnet-4-6', content, stop_reason: 'tool_use', stop_sequence: null });
    expect(Object.keys(message.usage as object).sort()).toEqual(
      ['cache_creation', 'cache_creation_input_tokens', 'cache_read_input_tokens', 'input_tokens', 'output_tokens', 'service_tier'].sort(),
    );
  });

  it('simulates prompt caching: a cached prefix is written once and read after', async () => {
    scenario({ rules: [{ reply: { content: [{ type: 'text', text: 'ok' }] } }] });
    const system = [{ type: 'text', text: 'You are Keel. '.repeat(400), cache_control: { type: 'ephemeral' } }];
    const first = (await (await post(request('one', { system }))).json()) as { usage: Record<string, number> };
    const second = (await (await post(request('two', { system }))).json()) as { usage: Record<string, number> };
    expect(first.usage.cache_creation_input_tokens).toBeGreaterThan(1_024);
    expect(first.usage.cache_read_input_tokens).toBe(0);
    expect(second.usage.cache_read_input_tokens).toBe(first.usage.cache_creation_input_tokens);
    expect(second.usage.cache_creation_input_tokens).toBe(0);
  });

  it('records every request with its body', async () => {
    scenario({ rules: [{ reply: { content: [{ type: 'text', text: 'ok' }] } }] });
    await post(request('remember me', { metadata: { user_id: 'u1' } }));
    const last = standin.requests.at(-1)!;
    expect(last.body).toMatchObject({ messages: [{ role: 'user', content: 'remember me' }], metadata: { user_id: 'u1' } });
    expect(last).toMatchObject({ method: 'POST', path: '/v1/messages', status: 200, outcome: 'completed', rule: 'rule 1' });
  });
});

describe('stand-in: mid-stream faults', () => {
  const reply = { content: [{ type: 'text' as const, text: 'abcdefghijklmnopqrstuvwxyz' }], chunkSize: 2 };

  it('sends event: error in the stream', async () => {
    scenario({ rules: [{ reply, fault: { kind: 'stream_error', afterEvents: 3, errorType: 'overloaded_error' } }] });
    const response = await post(request('x', { stream: true }));
    expect(response.status).toBe(200);
    const events = frames(await response.text());
    expect(events.filter((frame) => frame.event !== 'ping').map((frame) => frame.event)).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'error',
    ]);
    expect(JSON.parse(events.at(-1)!.data)).toEqual({
      type: 'error',
      error: { type: 'overloaded_error', message: 'Overloaded' },
      request_id: response.headers.get('request-id'),
    });
  });

  it('sends malformed JSON', async () => {
    scenario({ rules: [{ reply, fault: { kind: 'malformed_json', afterEvents: 2 } }] });
    const events = frames(await (await post(request('x', { stream: true }))).text());
    expect(() => JSON.parse(events.at(-1)!.data) as unknown).toThrow(SyntaxError);
  });

  it('drops the socket mid-stream', async () => {
    scenario({ rules: [{ reply, fault: { kind: 'drop', afterEvents: 4 } }] });
    const response = await post(request('x', { stream: true }));
    expect(response.status).toBe(200);
    await expect(response.text()).rejects.toThrow();
    expect(standin.requests.at(-1)!.outcome).toBe('dropped');
  });

  it('hangs until the client gives up, and records that the client closed', async () => {
    scenario({ rules: [{ fault: { kind: 'hang' } }] });
    const aborter = new AbortController();
    const pending = fetch(`${standin.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...AUTH, ...VERSION },
      body: JSON.stringify(request('y', { stream: true })),
      signal: aborter.signal,
    }).catch((error: unknown) => error);
    const hung = await standin.waitFor((entry) => entry.outcome === 'pending' && entry.rule !== null, 15_000);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(hung.closedAt).toBeNull();
    aborter.abort();
    expect(await pending).toBeInstanceOf(Error);
    const closed = await standin.waitFor((entry) => entry.seq === hung.seq && entry.closedAt !== null, 15_000);
    expect(closed).toMatchObject({ clientClosedEarly: true, outcome: 'client_closed' });
  });
});
