// What the real Messages API refuses with a 400 invalid_request_error, checked before any
// rule is matched — so a Keel bug that would fail against Claude fails against the
// stand-in too. The messages are the API's own wording.

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

import { forcesToolChoice, maxOutputTokens, thinkingModes } from '../machines/model-limits';
import { breakpointCount, promptBlocks } from './usage';

export { maxOutputTokens };

function blocksOf(message: Json): Json[] | null {
  return Array.isArray(message.content) ? (message.content as unknown[]).filter(isObject) : null;
}

/** The first problem the real API would report for this request body, or null. */
export function requestProblem(body: Json): string | null {
  const model = typeof body.model === 'string' ? body.model : '';
  const maxTokens = body.max_tokens;
  if (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens < 1) return 'max_tokens: Input should be a valid integer greater than or equal to 1';
  const cap = maxOutputTokens(model);
  if (maxTokens > cap) return `max_tokens: ${maxTokens} > ${cap}, which is the maximum allowed number of output tokens for ${model}`;

  if (isObject(body.thinking) && body.thinking.type === 'enabled') {
    const budget = body.thinking.budget_tokens;
    if (typeof budget !== 'number' || budget < 1_024) return 'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024';
    if (maxTokens <= budget) return '`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size';
  }

  if (body.temperature !== undefined) {
    if (typeof body.temperature !== 'number') return 'temperature: Input should be a valid number';
    if (body.temperature > 1) return 'temperature: Input should be less than or equal to 1';
    if (body.temperature < 0) return 'temperature: Input should be greater than or equal to 0';
  }
  const thinkingOn = isObject(body.thinking) && (body.thinking.type === 'enabled' || body.thinking.type === 'adaptive');
  if (thinkingOn && isObject(body.tool_choice) && (body.tool_choice.type === 'any' || body.tool_choice.type === 'tool')) {
    return 'Thinking may not be enabled when tool_choice forces tool use.';
  }
  const toolProblem = toolsProblem(body.tools);
  if (toolProblem !== null) return toolProblem;
  if (typeof body.system !== 'string' && Array.isArray(body.system)) {
    for (const [i, part] of (body.system as unknown[]).entries()) {
      if (isObject(part) && part.type === 'text' && (typeof part.text !== 'string' || part.text.length === 0)) return `system.${i}: text content blocks must be non-empty`;
    }
  }
  const breakpoints = breakpointCount(body);
  if (breakpoints > 4) return `A maximum of 4 blocks with cache_control may be provided. Found ${breakpoints}.`;
  // A 1-hour entry must come before any 5-minute one: a shorter-lived prefix cannot hold a longer-lived one.
  const ttls = promptBlocks(body).flatMap((b) => (b.breakpoint !== null ? [b.breakpoint] : []));
  if (ttls.some((ttl, i) => ttl === '1h' && ttls.slice(0, i).includes('5m'))) {
    return 'a cache_control block with ttl="1h" cannot come after a cache_control block with ttl="5m"';
  }

  const messages = Array.isArray(body.messages) ? (body.messages as unknown[]) : [];
  if (isObject(messages[0]) && messages[0].role === 'assistant') return 'messages: first message must use the "user" role';
  const seen = new Set<string>();
  for (const [i, raw] of messages.entries()) {
    if (!isObject(raw)) return `messages.${i}: Input should be a valid dictionary`;
    if (raw.role !== 'user' && raw.role !== 'assistant') return `messages.${i}.role: Input should be 'user' or 'assistant'`;
    const last = i === messages.length - 1;
    const blocks = blocksOf(raw);
    const empty = typeof raw.content === 'string' ? raw.content.length === 0 : blocks === null || blocks.length === 0;
    if (empty && !(last && raw.role === 'assistant')) return `messages.${i}: all messages must have non-empty content except for the optional final assistant message`;
    let others = false;
    for (const [j, block] of (blocks ?? []).entries()) {
      if (block.type === 'text' && (typeof block.text !== 'string' || block.text.length === 0)) return 'messages: text content blocks must be non-empty';
      if (block.type === 'tool_result') {
        if (others && raw.role === 'user') return `messages.${i}.content.${j}: \`tool_result\` blocks must come first in the user message content, before any other content`;
        const inner = Array.isArray(block.content) ? (block.content as unknown[]).filter(isObject) : [];
        if (inner.some((b) => b.type === 'text' && (typeof b.text !== 'string' || b.text.length === 0))) return 'messages: text content blocks must be non-empty';
      } else {
        others = true;
      }
      if (block.type === 'tool_use' && raw.role !== 'assistant') return `messages.${i}: \`tool_use\` blocks can only be in \`assistant\` messages`;
      if (block.type === 'tool_result' && raw.role !== 'user') return `messages.${i}: \`tool_result\` blocks can only be in \`user\` messages`;
      if (block.type === 'tool_use' && typeof block.id === 'string') {
        if (seen.has(block.id)) return `messages.${i}: \`tool_use\` ids must be unique`;
        seen.add(block.id);
      }
    }
    // Every tool_use is answered in the very next message; every tool_result answers the previous one.
    const previous = i > 0 && isObject(messages[i - 1]) ? blocksOf(messages[i - 1] as Json) : null;
    const asked = new Set((previous ?? []).flatMap((b) => (b.type === 'tool_use' && typeof b.id === 'string' ? [b.id] : [])));
    const answered = (blocks ?? []).flatMap((b) => (b.type === 'tool_result' && typeof b.tool_use_id === 'string' ? [b.tool_use_id] : []));
    for (const [j, id] of answered.entries()) {
      if (!asked.has(id)) {
        return `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
      }
    }
    const unanswered = [...asked].filter((id) => !answered.includes(id));
    if (unanswered.length > 0) {
      return `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${unanswered.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
    }
  }
  // A tool_use in the last message has no next message to be answered in.
  const final = messages.at(-1);
  if (isObject(final) && final.role === 'assistant' && (blocksOf(final) ?? []).some((b) => b.type === 'tool_use')) {
    return `messages.${messages.length - 1}: the final assistant message cannot end with \`tool_use\` blocks: each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
  }
  // The model continues a final assistant turn from its last character: not from whitespace.
  if (isObject(final) && final.role === 'assistant') {
    const tail = typeof final.content === 'string' ? final.content : (blocksOf(final) ?? []).at(-1);
    const text = typeof tail === 'string' ? tail : tail?.type === 'text' && typeof tail.text === 'string' ? tail.text : null;
    if (text !== null && text !== '' && text.trimEnd() !== text) return 'messages: final assistant content cannot end with trailing whitespace';
  }
  return thinkingProblem(body, model, messages) ?? contentProblem(body, messages);
}

/** Extended thinking's rules: what the model takes, what thinking excludes, where thinking blocks may be. */
function thinkingProblem(body: Json, model: string, messages: unknown[]): string | null {
  const thinking = isObject(body.thinking) ? body.thinking : null;
  const modes = thinkingModes(model);
  if (thinking?.type === 'enabled' && !modes.manual) return `thinking.type.enabled is not supported for this model. Use thinking.type.adaptive and the effort parameter instead.`;
  if (thinking?.type === 'adaptive' && !modes.adaptive) return `thinking.type.adaptive is not supported for this model.`;
  const on = thinking?.type === 'enabled' || thinking?.type === 'adaptive';
  if (on) {
    if (body.temperature !== undefined && body.temperature !== 1) return '`temperature` may only be set to 1 when thinking is enabled. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#feature-compatibility';
    if (body.top_k !== undefined) return '`top_k` must be unset when thinking is enabled. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#feature-compatibility';
    if (body.top_p !== undefined && (typeof body.top_p !== 'number' || body.top_p < 0.95)) return '`top_p` must be greater than or equal to 0.95 or unset when thinking is enabled. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#feature-compatibility';
  }
  // Where thinking is always on, a forced tool is refused as with thinking enabled.
  if (!forcesToolChoice(model) && isObject(body.tool_choice) && (body.tool_choice.type === 'any' || body.tool_choice.type === 'tool')) {
    return 'Thinking may not be enabled when tool_choice forces tool use.';
  }
  for (const [i, raw] of messages.entries()) {
    if (!isObject(raw)) continue;
    for (const [j, block] of (blocksOf(raw) ?? []).entries()) {
      if (block.type !== 'thinking' && block.type !== 'redacted_thinking') continue;
      if (raw.role !== 'assistant') return `messages.${i}.content.${j}: \`${String(block.type)}\` blocks can only be in \`assistant\` messages`;
      if (block.cache_control !== undefined) return `messages.${i}.content.${j}.${String(block.type)}.cache_control: Extra inputs are not permitted`;
      if (block.type === 'thinking' && (typeof block.signature !== 'string' || block.signature.length === 0)) return `messages.${i}.content.${j}.thinking.signature: Field required`;
    }
  }
  // With manual thinking on, a tool loop's last assistant turn must begin with its thinking.
  if (thinking?.type === 'enabled') {
    const last = messages.length - 1;
    const final = messages[last];
    const loop = isObject(final) && final.role === 'user' && (blocksOf(final) ?? []).some((b) => b.type === 'tool_result');
    const previous = loop ? messages[last - 1] : null;
    const first = isObject(previous) ? (blocksOf(previous) ?? [])[0] : undefined;
    if (loop && first !== undefined && first.type !== 'thinking' && first.type !== 'redacted_thinking') {
      return `messages.${last - 1}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${String(first.type)}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable \`thinking\`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking`;
    }
  }
  return null;
}

const TOP_LEVEL = new Set([
  'model', 'max_tokens', 'messages', 'system', 'tools', 'tool_choice', 'thinking', 'temperature', 'top_k', 'top_p', 'stop_sequences',
  'stream', 'metadata', 'service_tier', 'container', 'mcp_servers', 'context_management', 'output_config', 'cache_control', 'inference_geo',
]);
const BLOCK_TYPES = new Set([
  'text', 'image', 'document', 'search_result', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking', 'server_tool_use',
  'web_search_tool_result', 'web_fetch_tool_result', 'code_execution_tool_result', 'bash_code_execution_tool_result',
  'text_editor_code_execution_tool_result', 'mcp_tool_use', 'mcp_tool_result', 'container_upload',
]);
const IMAGE_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'];
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Fields, block types, media and cache TTLs the API does not take. */
function contentProblem(body: Json, messages: unknown[]): string | null {
  const extra = Object.keys(body).find((key) => !TOP_LEVEL.has(key));
  if (extra !== undefined) return `${extra}: Extra inputs are not permitted`;
  if (Array.isArray(body.system)) {
    for (const [i, part] of (body.system as unknown[]).entries()) {
      if (isObject(part) && part.type !== 'text') return `system.${i}.type: Input should be 'text'`;
      const ttl = isObject(part) ? ttlProblem(part, `system.${i}.text`) : null;
      if (ttl !== null) return ttl;
    }
  }
  let toolBlocks = false;
  for (const [i, raw] of messages.entries()) {
    if (!isObject(raw)) continue;
    for (const [j, block] of (blocksOf(raw) ?? []).entries()) {
      const where = `messages.${i}.content.${j}`;
      if (typeof block.type !== 'string' || !BLOCK_TYPES.has(block.type)) {
        return `${where}: Input tag '${String(block.type)}' found using 'type' does not match any of the expected tags: ${[...BLOCK_TYPES].map((t) => `'${t}'`).join(', ')}`;
      }
      if (block.type === 'tool_use' || block.type === 'tool_result') toolBlocks = true;
      const ttl = ttlProblem(block, `${where}.${block.type}`);
      if (ttl !== null) return ttl;
      const media = block.type === 'image' || block.type === 'document' ? mediaProblem(block, where) : null;
      if (media !== null) return media;
      const inner = block.type === 'tool_result' && Array.isArray(block.content) ? (block.content as unknown[]).filter(isObject) : [];
      for (const [k, part] of inner.entries()) {
        const problem = part.type === 'image' || part.type === 'document' ? mediaProblem(part, `${where}.tool_result.content.${k}`) : null;
        if (problem !== null) return problem;
      }
    }
  }
  const tools = Array.isArray(body.tools) ? body.tools : [];
  if (toolBlocks && tools.length === 0) return 'Requests which include `tool_use` or `tool_result` blocks must define tools.';
  return null;
}

function ttlProblem(block: Json, where: string): string | null {
  const cc = block.cache_control;
  if (cc === undefined || cc === null) return null;
  if (!isObject(cc) || cc.type !== 'ephemeral') return `${where}.cache_control.type: Input should be 'ephemeral'`;
  if (cc.ttl !== undefined && cc.ttl !== '5m' && cc.ttl !== '1h') return `${where}.cache_control.ephemeral.ttl: Input should be '5m' or '1h'`;
  return null;
}

function mediaProblem(block: Json, where: string): string | null {
  const source = isObject(block.source) ? block.source : null;
  if (source === null) return `${where}.${String(block.type)}.source: Field required`;
  if (block.type === 'image' && source.type === 'base64') {
    if (typeof source.media_type !== 'string' || !IMAGE_TYPES.includes(source.media_type)) {
      return `${where}.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`;
    }
    if (typeof source.data !== 'string' || source.data.length === 0 || !BASE64.test(source.data)) return `${where}.image.source.base64: The image data is not valid base64.`;
  }
  if (block.type === 'document' && source.type === 'base64') {
    if (source.media_type !== 'application/pdf') return `${where}.document.source.base64.media_type: Input should be 'application/pdf'`;
    if (typeof source.data !== 'string' || source.data.length === 0 || !BASE64.test(source.data)) return `${where}.document.source.base64: The PDF specified was not valid.`;
  }
  return null;
}

/** Custom tools need a valid name and an `input_schema`; server tools (typed, e.g. `web_search_20250305`) bring their own. */
function toolsProblem(tools: unknown): string | null {
  if (tools === undefined) return null;
  if (!Array.isArray(tools)) return 'tools: Input should be a valid list';
  const names = new Set<string>();
  for (const [i, tool] of (tools as unknown[]).entries()) {
    if (!isObject(tool)) return `tools.${i}: Input should be a valid dictionary`;
    const custom = tool.type === undefined || tool.type === null || tool.type === 'custom';
    if (!custom) continue;
    if (typeof tool.name !== 'string' || !TOOL_NAME.test(tool.name)) return `tools.${i}.custom.name: String should match pattern '${TOOL_NAME.source}'`;
    if (!isObject(tool.input_schema)) return `tools.${i}.custom.input_schema: Field required`;
    if (tool.input_schema.type !== 'object') return `tools.${i}.custom.input_schema.type: Input should be 'object'`;
    if (names.has(tool.name)) return `tools: Tool names must be unique.`;
    names.add(tool.name);
  }
  return null;
}

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,128}$/;
