// The conversation in the shape of the Anthropic Messages API, and the check that a
// transcript is a valid request: the turn machine must never hand the model one that the
// API would refuse. Field names are the API's own, so no mapping is needed at the edge.
import { z } from 'zod';
import { jsonSchema } from './core';
import { lazySchema } from './lazy-schema';
import { storedOutputSchema } from './stored-output';

export const contentBlockSchema = lazySchema(() => z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('text'), text: z.string() }),
  z.strictObject({ type: z.literal('tool_use'), id: z.string().min(1), name: z.string().min(1), input: jsonSchema }),
  z.strictObject({
    type: z.literal('tool_result'),
    tool_use_id: z.string().min(1),
    content: z.string(),
    is_error: z.boolean(),
    /** Keel's own: `content` is a preview, the whole result is stored (machines/stored-output.ts); never sent to the API. */
    keel_stored: storedOutputSchema.optional(),
  }),
  // Thinking blocks go back to the API exactly as it sent them (signatures included).
  z.strictObject({ type: z.literal('thinking'), thinking: z.string(), signature: z.string() }),
  z.strictObject({ type: z.literal('redacted_thinking'), data: z.string() }),
  // Server tools (web search, web fetch) run at the API; their blocks go back as the API
  // sent them when a paused turn continues, whatever fields a newer API adds.
  z.looseObject({ type: z.literal('server_tool_use'), id: z.string().min(1), name: z.string().min(1), input: jsonSchema }),
  z.looseObject({ type: z.literal('web_search_tool_result'), tool_use_id: z.string().min(1), content: jsonSchema }),
  z.looseObject({ type: z.literal('web_fetch_tool_result'), tool_use_id: z.string().min(1), content: jsonSchema }),
]));
export type ContentBlock = z.infer<typeof contentBlockSchema>;
export type ToolUseBlock = Extract<ContentBlock, { type: 'tool_use' }>;
export type ToolResultBlock = Extract<ContentBlock, { type: 'tool_result' }>;

export const messageSchema = lazySchema(() => z.strictObject({
  role: z.enum(['user', 'assistant']),
  content: z.array(contentBlockSchema),
}));
export type Message = z.infer<typeof messageSchema>;

/**
 * Problems that would make the Messages API refuse this conversation as a request; empty
 * when it is valid. Consecutive messages of one role are allowed — the API merges them:
 * a turn that ended without an answer (a refusal, an empty reply) must not invent one to
 * keep the roles alternating, and a paused answer is followed by its continuation. The last message
 * comes from the user, except for a `continuation` (pause_turn: the model's paused answer
 * goes back as it is, and the model goes on from there).
 */
export function conversationProblems(messages: readonly Message[], options: { continuation?: boolean } = {}): string[] {
  const problems: string[] = [];
  if (messages.length === 0) return ['the conversation is empty'];
  if (messages[0]?.role !== 'user') problems.push('message 0: the first message must come from the user');
  const last = messages[messages.length - 1];
  if (options.continuation === true) {
    if (last?.role !== 'assistant' || last.content.some((b) => b.type === 'tool_use')) {
      problems.push(`message ${messages.length - 1}: a continuation ends with the model's paused answer (no tool_use)`);
    }
  } else if (last?.role !== 'user') problems.push(`message ${messages.length - 1}: the last message must come from the user`);
  const seenToolUse = new Set<string>();
  messages.forEach((message, i) => {
    if (message.content.length === 0) problems.push(`message ${i}: empty content`);
    const previous = messages[i - 1];
    // The API merges consecutive messages of one role (a paused answer and its continuation);
    // only a tool_use that is not answered by the very next (user) message is refused.
    if (previous?.role === 'assistant' && message.role === 'assistant' && previous.content.some((b) => b.type === 'tool_use')) {
      problems.push(`message ${i}: the tool_use blocks of message ${i - 1} are not answered`);
    }
    if (message.role === 'assistant') {
      for (const block of message.content) {
        if (block.type === 'tool_result') problems.push(`message ${i}: tool_result in an assistant message`);
        if (block.type === 'tool_use') {
          if (seenToolUse.has(block.id)) problems.push(`message ${i}: duplicate tool_use id ${block.id}`);
          seenToolUse.add(block.id);
        }
      }
      return;
    }
    for (const block of message.content) {
      if (block.type !== 'text' && block.type !== 'tool_result') {
        problems.push(`message ${i}: ${block.type} in a user message`);
      }
    }
    // Every tool_use of the previous assistant message is answered here, first, in order,
    // exactly once; no other tool_result appears.
    const asked = previous?.role === 'assistant' ? previous.content.filter((b) => b.type === 'tool_use').map((b) => b.id) : [];
    const results = message.content.filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id);
    const leading = message.content.slice(0, asked.length).map((b) => (b.type === 'tool_result' ? b.tool_use_id : null));
    if (asked.length > 0 && JSON.stringify(leading) !== JSON.stringify(asked)) {
      problems.push(`message ${i}: expected tool_results for [${asked.join(', ')}] first, in order; got [${leading.map((id) => id ?? 'another block').join(', ')}]`);
    }
    if (results.length !== asked.length) {
      problems.push(`message ${i}: ${results.length} tool_result blocks answer ${asked.length} tool_use blocks`);
    }
  });
  return problems;
}
