// A scripted reply rendered as the real API renders it: a complete `Message` for
// non-streaming calls, and for `stream: true` the SSE events in the real order —
// message_start, per block content_block_start / content_block_delta* /
// content_block_stop (a ping after the first start), message_delta, message_stop.
import { messageId, serverToolUseId, thinkingSignature, toolUseId } from './ids';
import type { Reply } from './scenario';
import type { ApiUsage } from './usage';

export type ApiContentBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown>; cutAfterChars?: number }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'server_tool_use'; id: string; name: string; input: Record<string, unknown> }
  | { type: 'web_search_tool_result'; tool_use_id: string; content: Record<string, unknown>[] };

export interface ApiMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: ApiContentBlock[];
  stop_reason: string;
  stop_sequence: string | null;
  stop_details: { type: 'refusal'; category: string | null; explanation: string | null } | null;
  usage: ApiUsage;
}

export interface SseEvent {
  event: string;
  data: Record<string, unknown>;
  /** A content delta: the reply's `delayMs` is paid before it. */
  delta: boolean;
}

export function renderMessage(reply: Reply, model: string, usage: ApiUsage): ApiMessage {
  let lastServerToolUse = '';
  const content = reply.content.map((block): ApiContentBlock => {
    switch (block.type) {
      case 'text':
        return { type: 'text', text: block.text };
      case 'tool_use':
        return {
          type: 'tool_use',
          id: block.id ?? toolUseId(),
          name: block.name,
          input: block.input,
          ...(block.cutAfterChars !== undefined ? { cutAfterChars: block.cutAfterChars } : {}),
        };
      case 'thinking':
        return { type: 'thinking', thinking: block.thinking, signature: block.signature ?? thinkingSignature(block.thinking) };
      case 'server_tool_use':
        lastServerToolUse = block.id ?? serverToolUseId();
        return { type: 'server_tool_use', id: lastServerToolUse, name: block.name, input: block.input };
      case 'web_search_tool_result':
        return { type: 'web_search_tool_result', tool_use_id: block.tool_use_id ?? lastServerToolUse, content: block.content };
    }
  });
  const cut = content.some((block) => block.type === 'tool_use' && block.cutAfterChars !== undefined);
  const stopReason = reply.stopReason ?? (cut ? 'max_tokens' : content.some((block) => block.type === 'tool_use') ? 'tool_use' : 'end_turn');
  return {
    id: messageId(),
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: stopReason,
    stop_sequence: reply.stopSequence ?? null,
    stop_details: reply.stopDetails !== undefined ? { type: 'refusal', ...reply.stopDetails } : null,
    usage,
  };
}

function chunks(text: string, size: number): string[] {
  const out: string[] = [];
  // Split on code points so a delta never carries half a surrogate pair.
  const points = Array.from(text);
  for (let start = 0; start < points.length; start += size) out.push(points.slice(start, start + size).join(''));
  return out;
}

export function renderStream(message: ApiMessage, chunkSize: number): SseEvent[] {
  const events: SseEvent[] = [];
  const push = (event: string, data: Record<string, unknown>, delta = false) => events.push({ event, data, delta });
  const { usage } = message;

  push('message_start', {
    type: 'message_start',
    message: {
      ...message,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      stop_details: null,
      // The opening usage counts the prompt; output so far is the first token.
      usage: { ...usage, output_tokens: Math.min(1, usage.output_tokens) },
    },
  });
  message.content.forEach((block, index) => {
    const delta = (payload: Record<string, unknown>) =>
      push('content_block_delta', { type: 'content_block_delta', index, delta: payload }, true);
    switch (block.type) {
      case 'text':
        push('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
        if (index === 0) push('ping', { type: 'ping' });
        for (const text of chunks(block.text, chunkSize)) delta({ type: 'text_delta', text });
        break;
      case 'tool_use':
        push('content_block_start', {
          type: 'content_block_start',
          index,
          content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} },
        });
        if (index === 0) push('ping', { type: 'ping' });
        // The API opens tool input with an empty fragment; the pieces concatenate to JSON.
        delta({ type: 'input_json_delta', partial_json: '' });
        // A cut block sends the beginning of its JSON only: max_tokens struck inside it.
        for (const partial_json of chunks(JSON.stringify(block.input).slice(0, block.cutAfterChars), chunkSize)) delta({ type: 'input_json_delta', partial_json });
        break;
      case 'thinking':
        push('content_block_start', {
          type: 'content_block_start',
          index,
          content_block: { type: 'thinking', thinking: '', signature: '' },
        });
        if (index === 0) push('ping', { type: 'ping' });
        for (const thinking of chunks(block.thinking, chunkSize)) delta({ type: 'thinking_delta', thinking });
        delta({ type: 'signature_delta', signature: block.signature });
        break;
      case 'server_tool_use':
        push('content_block_start', { type: 'content_block_start', index, content_block: { type: 'server_tool_use', id: block.id, name: block.name, input: {} } });
        if (index === 0) push('ping', { type: 'ping' });
        for (const partial_json of chunks(JSON.stringify(block.input), chunkSize)) delta({ type: 'input_json_delta', partial_json });
        break;
      case 'web_search_tool_result':
        // The API sends a server tool's result whole, in its content_block_start.
        push('content_block_start', { type: 'content_block_start', index, content_block: block });
        if (index === 0) push('ping', { type: 'ping' });
        break;
    }
    push('content_block_stop', { type: 'content_block_stop', index });
  });
  push('message_delta', {
    type: 'message_delta',
    delta: { stop_reason: message.stop_reason, stop_sequence: message.stop_sequence, stop_details: message.stop_details },
    usage: {
      input_tokens: usage.input_tokens,
      cache_creation_input_tokens: usage.cache_creation_input_tokens,
      cache_read_input_tokens: usage.cache_read_input_tokens,
      output_tokens: usage.output_tokens,
      ...(usage.server_tool_use !== undefined ? { server_tool_use: usage.server_tool_use } : {}),
    },
  });
  push('message_stop', { type: 'message_stop' });
  return events;
}

export function sseFrame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}
