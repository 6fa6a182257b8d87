// What the real Messages API refuses with a 400 invalid_request_error, checked before any
// rule is matched — so a Keel bug that would fail against Claude fails against the
// stand-in too. The messages are the API's own wording.

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

import { maxOutputTokens } from '../machines/model-limits';
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
