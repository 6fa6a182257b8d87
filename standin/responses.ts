// The OpenAI Responses API (`POST /v1/responses`, non-streaming) answering the same
// scenario as the Messages API: a request is read into the same facts (the last user
// message, or the last function_call_output as a tool result), the same rules pick the
// reply, and the reply is rendered as a Responses `response` object (text → an output
// message, tool_use → a function_call). It exists so `npm run bench` can run
// @temporalio/openai-agents against the script Keel and the Anthropic peers get.
import { randomBytes } from 'node:crypto';
import type { RequestFacts } from './match';
import type { Reply } from './scenario';

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const id = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter(isObject)
    .map((part) => (typeof part.text === 'string' ? part.text : ''))
    .filter((text) => text.length > 0)
    .join('\n');
}

/** What the Messages API side would see in the equivalent request. */
export function responsesFacts(body: Json, request: number): RequestFacts {
  const items = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : Array.isArray(body.input) ? body.input.filter(isObject) : [];
  const last = items.at(-1);
  const hasToolResults = last?.type === 'function_call_output';
  const lastUser = [...items].reverse().find((item) => item.role === 'user');
  const tools = Array.isArray(body.tools) ? body.tools.filter(isObject).flatMap((tool) => (typeof tool.name === 'string' ? [tool.name] : [])) : [];
  return {
    request,
    turn: items.filter((item) => item.role === 'assistant' || item.type === 'function_call').length + 1,
    model: typeof body.model === 'string' ? body.model : '',
    stream: body.stream === true,
    lastUserText: hasToolResults ? textOf(last.output) : textOf(lastUser?.content),
    hasToolResults,
    tools,
    systemText: typeof body.instructions === 'string' ? body.instructions : '',
  };
}

export function renderResponse(reply: Reply, model: string): Json {
  const output: Json[] = [];
  const text = reply.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('');
  if (text) {
    output.push({ type: 'message', id: id('msg'), status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] });
  }
  for (const block of reply.content) {
    if (block.type === 'tool_use') {
      output.push({ type: 'function_call', id: id('fc'), call_id: id('call'), name: block.name, arguments: JSON.stringify(block.input), status: 'completed' });
    }
  }
  const outputTokens = Math.max(1, Math.ceil(JSON.stringify(output).length / 4));
  return {
    id: id('resp'),
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status: 'completed',
    error: null,
    incomplete_details: null,
    model,
    output,
    parallel_tool_calls: true,
    tool_choice: 'auto',
    tools: [],
    usage: { input_tokens: 100, input_tokens_details: { cached_tokens: 0 }, output_tokens: outputTokens, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 100 + outputTokens },
  };
}
