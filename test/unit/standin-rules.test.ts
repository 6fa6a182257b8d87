// More of what the real Messages API refuses, which the stand-in refused nothing of before:
// thinking rules, media, tool blocks without tools, unknown fields and block types, bad
// cache TTLs, a final assistant turn ending in whitespace, thinking modes a model does not
// take. Each request is sent through the real SDK and must come back as the API's 400.
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Standin, startStandin } from '../../standin/server';

let standin: Standin;
let client: Anthropic;

beforeAll(async () => {
  standin = await startStandin({ scenario: { rules: [{ reply: { content: [{ type: 'text', text: 'fine' }] } }] } });
  client = new Anthropic({ apiKey: 'sk-ant-unit', baseURL: standin.url, maxRetries: 0 });
});

afterAll(async () => {
  await standin?.close();
});

type Body = Record<string, unknown>;
const tools = [{ name: 'read_file', description: 'reads', input_schema: { type: 'object', properties: {} } }];
const user = (content: unknown) => ({ role: 'user', content });
const assistant = (content: unknown) => ({ role: 'assistant', content });
const use = { type: 'tool_use', id: 't1', name: 'read_file', input: {} };
const result = { type: 'tool_result', tool_use_id: 't1', content: 'ok' };
const thought = { type: 'thinking', thinking: 'Let me see.', signature: 'sig-1' };
const thinking = { type: 'enabled', budget_tokens: 1_024 };
const png = (data: string, media_type = 'image/png') => ({ type: 'image', source: { type: 'base64', media_type, data } });
const body = (extra: Body): Body => ({ model: 'claude-sonnet-4-5', max_tokens: 2_048, messages: [user('hi')], ...extra });

async function send(request: Body): Promise<{ status: number | undefined; type: string | undefined; message: string | undefined }> {
  const error = await client.messages.create(request as unknown as Anthropic.MessageCreateParamsNonStreaming, { timeout: 30_000 }).then(
    () => null,
    (e: unknown) => e,
  );
  if (!(error instanceof Anthropic.APIError)) return { status: 200, type: undefined, message: undefined };
  const payload: { error?: { type?: string; message?: string } } = error.error as { error?: { type?: string; message?: string } };
  const { status } = error as { status?: number };
  return { status, type: payload.error?.type, message: payload.error?.message };
}

const refused: [string, Body, string | RegExp][] = [
  ['a final assistant turn ending in whitespace (as a paused answer is sent back)', body({ messages: [user('hi'), assistant([{ type: 'text', text: 'Searching now. ' }])] }), 'messages: final assistant content cannot end with trailing whitespace'],
  ['a final assistant string ending in a newline', body({ messages: [user('hi'), assistant('Here:\n')] }), 'messages: final assistant content cannot end with trailing whitespace'],
  ['temperature other than 1 with thinking', body({ thinking, temperature: 0.5 }), /^`temperature` may only be set to 1 when thinking is enabled/],
  ['top_k with thinking', body({ thinking, top_k: 5 }), /^`top_k` must be unset when thinking is enabled/],
  ['top_p below 0.95 with thinking', body({ thinking, top_p: 0.5 }), /^`top_p` must be greater than or equal to 0.95 or unset when thinking is enabled/],
  ['cache_control on a thinking block', body({ thinking, tools, messages: [user('hi'), assistant([{ ...thought, cache_control: { type: 'ephemeral' } }, use]), user([result])] }), 'messages.1.content.0.thinking.cache_control: Extra inputs are not permitted'],
  ['a thinking block in a user turn', body({ messages: [user([thought, { type: 'text', text: 'hi' }])] }), 'messages.0.content.0: `thinking` blocks can only be in `assistant` messages'],
  ['a thinking block without its signature', body({ thinking, tools, messages: [user('hi'), assistant([{ type: 'thinking', thinking: 'x' }, use]), user([result])] }), 'messages.1.content.0.thinking.signature: Field required'],
  ['a tool loop whose last assistant turn does not start with thinking', body({ thinking, tools, messages: [user('hi'), assistant([use]), user([result])] }), /^messages\.1\.content\.0\.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`/],
  ['manual thinking on a model that takes only adaptive', body({ model: 'claude-opus-4-7', thinking }), 'thinking.type.enabled is not supported for this model. Use thinking.type.adaptive and the effort parameter instead.'],
  ['adaptive thinking on a model without it', body({ thinking: { type: 'adaptive' } }), 'thinking.type.adaptive is not supported for this model.'],
  ['a forced tool where thinking is always on', body({ model: 'claude-fable-5', tools, tool_choice: { type: 'any' } }), 'Thinking may not be enabled when tool_choice forces tool use.'],
  ['an image media type the API does not take', body({ messages: [user([png('aGk=', 'image/bmp')])] }), "messages.0.content.0.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"],
  ['image data that is not base64', body({ messages: [user([png('not base64!')])] }), 'messages.0.content.0.image.source.base64: The image data is not valid base64.'],
  ['a document that is not a PDF', body({ messages: [user([{ type: 'document', source: { type: 'base64', media_type: 'text/csv', data: 'aGk=' } }])] }), "messages.0.content.0.document.source.base64.media_type: Input should be 'application/pdf'"],
  ['an image in the system prompt', body({ system: [png('aGk=')] }), "system.0.type: Input should be 'text'"],
  ['an image in a tool result with a bad media type', body({ tools, messages: [user('hi'), assistant([use]), user([{ ...result, content: [png('aGk=', 'image/tiff')] }])] }), /^messages\.2\.content\.0\.tool_result\.content\.0\.image\.source\.base64\.media_type/],
  ['tool blocks with no tools', body({ messages: [user('hi'), assistant([use]), user([result])] }), 'Requests which include `tool_use` or `tool_result` blocks must define tools.'],
  ['an unknown top-level field', body({ temprature: 0.2 }), 'temprature: Extra inputs are not permitted'],
  ['an unknown block type', body({ messages: [user([{ type: 'audio', data: 'x' }])] }), /^messages\.0\.content\.0: Input tag 'audio' found using 'type' does not match any of the expected tags/],
  ['a cache TTL the API does not know', body({ messages: [user([{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral', ttl: '10m' } }])] }), "messages.0.content.0.text.cache_control.ephemeral.ttl: Input should be '5m' or '1h'"],
  ['a system cache TTL the API does not know', body({ system: [{ type: 'text', text: 'sys', cache_control: { type: 'ephemeral', ttl: '1d' } }] }), "system.0.text.cache_control.ephemeral.ttl: Input should be '5m' or '1h'"],
];

describe('stand-in: what the API refuses', () => {
  it.each(refused)('refuses %s with a 400 invalid_request_error and the API\'s words', async (_what, request, message) => {
    const answer = await send(request);
    expect(answer.status).toBe(400);
    expect(answer.type).toBe('invalid_request_error');
    if (typeof message === 'string') expect(answer.message).toBe(message);
    else expect(answer.message).toMatch(message);
  });

  it('still takes the valid shapes next to them', async () => {
    for (const request of [
      body({ messages: [user('hi'), assistant([{ type: 'text', text: 'Searching now.' }])] }),
      body({ thinking, temperature: 1, top_p: 0.95 }),
      body({ thinking, tools, messages: [user('hi'), assistant([thought, use]), user([result])] }),
      body({ model: 'claude-opus-4-7', thinking: { type: 'adaptive' } }),
      body({ messages: [user([png('aGk='), { type: 'text', text: 'what is this?' }])] }),
      body({ messages: [user([{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral', ttl: '1h' } }])] }),
      body({ tools, tool_choice: { type: 'any' } }),
    ]) {
      expect(await send(request), JSON.stringify(request).slice(0, 200)).toMatchObject({ status: 200 });
    }
  });
});
