// The stand-in refuses what the real Messages API refuses, with the real error shape
// (400, invalid_request_error, the API's wording), before any scenario rule is consulted —
// through the real SDK, as Keel would see it.
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

type Params = Anthropic.MessageCreateParamsNonStreaming;
const base = (messages: Anthropic.MessageParam[], extra: Partial<Params> = {}): Params => ({ model: 'claude-sonnet-4-5', max_tokens: 256, messages, ...extra });
const use = (id: string): Anthropic.ToolUseBlockParam => ({ type: 'tool_use', id, name: 'read_file', input: { path: 'a' } });
const result = (id: string): Anthropic.ToolResultBlockParam => ({ type: 'tool_result', tool_use_id: id, content: 'ok' });

async function refusal(params: Params): Promise<{ status: number | undefined; type: string | null; message: string | null }> {
  // An explicit timeout: the SDK itself refuses a large non-streamed max_tokens without one.
  const error = await client.messages.create(params, { timeout: 30_000 }).then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(Anthropic.BadRequestError);
  const e = error as InstanceType<typeof Anthropic.BadRequestError>;
  return { status: e.status, type: e.type, message: (e.error as { error?: { message?: string } }).error?.message ?? null };
}

describe('stand-in strictness', () => {
  it('accepts a valid conversation with tool use, a merged user turn and a final assistant message', async () => {
    const ok = await client.messages.create(
      base([
        { role: 'user', content: 'read a' },
        { role: 'assistant', content: [use('t1')] },
        { role: 'user', content: [result('t1')] },
        { role: 'user', content: 'and then?' },
        { role: 'assistant', content: [{ type: 'text', text: 'Paused here' }] },
      ], { tools: [{ name: 'read_file', input_schema: { type: 'object' } }] }),
    );
    expect(ok.content[0]).toMatchObject({ type: 'text', text: 'fine' });
  });

  it('refuses a tool_use without its tool_result in the next message', async () => {
    expect(await refusal(base([{ role: 'user', content: 'x' }, { role: 'assistant', content: [use('t1')] }, { role: 'user', content: 'no result' }]))).toEqual({
      status: 400,
      type: 'invalid_request_error',
      message: expect.stringContaining('`tool_use` ids were found without `tool_result` blocks immediately after: t1') as string,
    });
  });

  it('refuses a tool_result for an id the previous message did not use', async () => {
    const r = await refusal(base([{ role: 'user', content: 'x' }, { role: 'assistant', content: [use('t1')] }, { role: 'user', content: [result('t1'), result('t9')] }]));
    expect(r.message).toContain('unexpected `tool_use_id` found in `tool_result` blocks: t9');
  });

  it('refuses empty content and empty text blocks', async () => {
    expect((await refusal(base([{ role: 'user', content: [] }]))).message).toContain('all messages must have non-empty content');
    expect((await refusal(base([{ role: 'user', content: [{ type: 'text', text: '' }] }]))).message).toBe('messages: text content blocks must be non-empty');
  });

  it('refuses a role the API does not know', async () => {
    expect((await refusal(base([{ role: 'system' as 'user', content: 'x' }]))).message).toBe("messages.0.role: Input should be 'user' or 'assistant'");
  });

  it('refuses more output tokens than the model allows, and a thinking budget not below max_tokens', async () => {
    expect((await refusal(base([{ role: 'user', content: 'x' }], { max_tokens: 100_000 }))).message).toBe(
      'max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5',
    );
    expect((await refusal(base([{ role: 'user', content: 'x' }], { max_tokens: 2_000, thinking: { type: 'enabled', budget_tokens: 2_000 } }))).message).toContain(
      '`max_tokens` must be greater than `thinking.budget_tokens`',
    );
  });

  it('answers an unknown model with the API\'s 404 not_found_error', async () => {
    const error = await client.messages.create(base([{ role: 'user', content: 'x' }], { model: 'claude-unreleased-9' })).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(Anthropic.NotFoundError);
    expect((error as InstanceType<typeof Anthropic.NotFoundError>).error).toMatchObject({ type: 'error', error: { type: 'not_found_error', message: 'model: claude-unreleased-9' } });
    // A dated snapshot of a known model is known.
    await expect(client.messages.create(base([{ role: 'user', content: 'x' }], { model: 'claude-sonnet-4-5-20250929' }))).resolves.toBeTruthy();
  });

  it('refuses a tool without input_schema, and a tool name the API does not allow', async () => {
    const noSchema = { name: 'read_file', description: 'Read' } as unknown as Anthropic.Tool;
    expect((await refusal(base([{ role: 'user', content: 'x' }], { tools: [noSchema] }))).message).toBe('tools.0.custom.input_schema: Field required');
    const badName: Anthropic.Tool = { name: 'read file!', input_schema: { type: 'object' } };
    expect((await refusal(base([{ role: 'user', content: 'x' }], { tools: [badName] }))).message).toContain('tools.0.custom.name: String should match pattern');
    // Server tools bring their own schema.
    await expect(client.messages.create(base([{ role: 'user', content: 'x' }], { tools: [{ type: 'web_search_20250305', name: 'web_search' }] }))).resolves.toBeTruthy();
  });

  it('refuses a tool_result that is not first in the user content', async () => {
    const r = await refusal(base([{ role: 'user', content: 'x' }, { role: 'assistant', content: [use('t1')] }, { role: 'user', content: [{ type: 'text', text: 'here:' }, result('t1')] }]));
    expect(r.message).toContain('messages.2.content.1: `tool_result` blocks must come first');
  });

  it('refuses thinking with a forced tool_choice', async () => {
    const tools: Anthropic.Tool[] = [{ name: 'submit_plan', input_schema: { type: 'object' } }];
    const params = base([{ role: 'user', content: 'plan' }], { max_tokens: 4_000, tools, tool_choice: { type: 'tool', name: 'submit_plan' }, thinking: { type: 'enabled', budget_tokens: 2_000 } });
    expect((await refusal(params)).message).toBe('Thinking may not be enabled when tool_choice forces tool use.');
    expect((await refusal({ ...params, tool_choice: { type: 'any' } })).message).toBe('Thinking may not be enabled when tool_choice forces tool use.');
  });

  it('refuses more than 4 cache_control breakpoints, the top-level one included', async () => {
    const system: Anthropic.TextBlockParam[] = ['a', 'b', 'c', 'd', 'e'].map((t) => ({ type: 'text', text: t, cache_control: { type: 'ephemeral' } }));
    expect((await refusal(base([{ role: 'user', content: 'x' }], { system }))).message).toBe('A maximum of 4 blocks with cache_control may be provided. Found 5.');
    expect((await refusal(base([{ role: 'user', content: 'x' }], { system: system.slice(0, 4), cache_control: { type: 'ephemeral' } }))).message).toBe(
      'A maximum of 4 blocks with cache_control may be provided. Found 5.',
    );
  });

  it('refuses a temperature above 1', async () => {
    expect((await refusal(base([{ role: 'user', content: 'x' }], { temperature: 2 } as Partial<Params>))).message).toBe('temperature: Input should be less than or equal to 1');
  });

  it('refuses a first message from the assistant', async () => {
    expect((await refusal(base([{ role: 'assistant', content: 'I start' }, { role: 'user', content: 'x' }]))).message).toBe('messages: first message must use the "user" role');
  });

  it('refuses an empty text block anywhere: in the system prompt and inside a tool_result', async () => {
    expect((await refusal(base([{ role: 'user', content: 'x' }], { system: [{ type: 'text', text: '' }] }))).message).toBe('system.0: text content blocks must be non-empty');
    const emptyInResult: Anthropic.ToolResultBlockParam = { type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: '' }] };
    expect((await refusal(base([{ role: 'user', content: 'x' }, { role: 'assistant', content: [use('t1')] }, { role: 'user', content: [emptyInResult] }]))).message).toBe(
      'messages: text content blocks must be non-empty',
    );
    expect((await refusal(base([{ role: 'user', content: 'x' }, { role: 'assistant', content: [{ type: 'text', text: '' }, use('t1')] }, { role: 'user', content: [result('t1')] }]))).message).toBe(
      'messages: text content blocks must be non-empty',
    );
  });
});
