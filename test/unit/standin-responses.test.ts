// The stand-in's OpenAI Responses API (standin/responses.ts), which `npm run bench` drives
// @temporalio/openai-agents with: the same rules as the Messages API pick the reply, a
// function_call_output counts as a tool result, and the reply has the Responses shape.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Standin, startStandin } from '../../standin/server';

let standin: Standin;

beforeAll(async () => {
  standin = await startStandin({
    scenario: {
      rules: [
        { name: 'read', match: { hasToolResults: false, lastUserContains: 'read it' }, reply: { content: [{ type: 'text', text: 'Reading.' }, { type: 'tool_use', name: 'read_file', input: { path: 'a.txt' } }] } },
        { name: 'answer', match: { hasToolResults: true, lastUserContains: 'file says hi' }, reply: { content: [{ type: 'text', text: 'It says hi.' }] } },
      ],
    },
  });
});

afterAll(async () => {
  await standin?.close();
});

function post(body: unknown, auth = true): Promise<Response> {
  return fetch(`${standin.url}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(auth ? { authorization: 'Bearer sk-unit' } : {}) },
    body: JSON.stringify(body),
  });
}

describe('stand-in: OpenAI Responses API', () => {
  it('answers a user message with an output message and a function_call', async () => {
    const res = await post({ model: 'gpt-bench', input: [{ role: 'user', content: 'please read it' }], tools: [{ type: 'function', name: 'read_file', parameters: {} }] });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { object: string; status: string; output: Array<Record<string, unknown>> };
    expect(body.object).toBe('response');
    expect(body.status).toBe('completed');
    expect(body.output.map((o) => o.type)).toEqual(['message', 'function_call']);
    expect(body.output[0]).toMatchObject({ role: 'assistant', content: [{ type: 'output_text', text: 'Reading.' }] });
    expect(body.output[1]).toMatchObject({ name: 'read_file', arguments: '{"path":"a.txt"}' });
    expect(String(body.output[1]!.call_id)).toMatch(/^call_/);
  });

  it('reads a function_call_output as the tool result the next rule matches on', async () => {
    const res = await post({
      model: 'gpt-bench',
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'please read it' }] },
        { type: 'function_call', call_id: 'call_1', name: 'read_file', arguments: '{"path":"a.txt"}' },
        { type: 'function_call_output', call_id: 'call_1', output: 'the file says hi' },
      ],
    });
    const body = (await res.json()) as { output: Array<{ type: string; content?: Array<{ text: string }> }> };
    expect(body.output).toHaveLength(1);
    expect(body.output[0]!.content![0]!.text).toBe('It says hi.');
    expect(standin.requests.at(-1)?.rule).toBe('answer');
  });

  it('refuses a request without a key, a streaming request, and one no rule matches', async () => {
    expect((await post({ model: 'gpt-bench', input: 'read it' }, false)).status).toBe(401);
    expect((await post({ model: 'gpt-bench', input: 'read it', stream: true })).status).toBe(400);
    const unmatched = await post({ model: 'gpt-bench', input: 'something else' });
    expect(unmatched.status).toBe(500);
    expect(await unmatched.text()).toMatch(/no rule .* matches/);
  });
});
