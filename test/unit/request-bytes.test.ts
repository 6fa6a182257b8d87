// A long warm conversation's request is sent from the bytes kept for its messages
// (activities/request-bytes.ts): what goes out must be `JSON.stringify(body)`, byte for byte,
// whichever messages were kept, copied (a cache breakpoint) or new, in any script; and kept
// bytes, once made, must never change under a request that is still being sent.
import { describe, expect, it } from 'vitest';
import { MessageBytes, requestParts, streamedBody } from '../../activities/request-bytes';
import { withPromptCaching } from '../../activities/llm-cache';
import type Anthropic from '@anthropic-ai/sdk';

const text = (role: 'user' | 'assistant', t: string): Anthropic.MessageParam => ({ role, content: [{ type: 'text', text: t }] });
const joined = (parts: Buffer[]) => Buffer.concat(parts).toString('utf8');

async function read(stream: ReadableStream<Uint8Array>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

describe('a request from kept bytes', () => {
  const conversation: Anthropic.MessageParam[] = [
    text('user', 'start ✓ — naïve café 日本語 🚀'),
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'a "quoted"\\path\n' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: `lone surrogate \ud800 and \u2028 and \u0000 end` }] },
    text('assistant', 'read it'),
    text('user', 'next'),
  ];

  it('is JSON.stringify of the body, with the breakpoints copied and new messages serialised here', async () => {
    const kept = MessageBytes.of(conversation);
    const cached = withPromptCaching({ system: 'be brief', tools: [{ name: 't', description: 'd', input_schema: { type: 'object', properties: {} } }], messages: conversation });
    // Two breakpoints in the conversation: those messages are copies, the rest the kept objects.
    expect(cached.messages.filter((m, i) => m !== conversation[i])).toHaveLength(2);
    const body = {
      model: 'claude-opus-4-6',
      max_tokens: 1024,
      messages: [...cached.messages, text('assistant', 'not kept yet')],
      stream: true,
      system: cached.system,
      tools: cached.tools,
      temperature: undefined,
      thinking: { type: 'enabled', budget_tokens: 2048 },
    };
    const parts = requestParts(body, conversation, kept);
    expect(joined(parts)).toBe(JSON.stringify(body));

    const sent = streamedBody(parts);
    const bytes = await read(sent.body);
    expect(bytes.toString('utf8')).toBe(JSON.stringify(body));
    expect(sent.headers['content-length']).toBe(String(Buffer.byteLength(JSON.stringify(body))));
    expect(sent.headers['content-type']).toBe('application/json');
  });

  it('sends each run of kept messages as one view of the kept buffer, ending the array right', () => {
    const kept = MessageBytes.of(conversation);
    // All kept, the last element a kept one: one view for the five messages, its last comma dropped.
    const body = { model: 'm', messages: conversation, stream: true };
    const parts = requestParts(body, conversation, kept);
    expect(joined(parts)).toBe(JSON.stringify(body));
    expect(parts).toHaveLength(3);
    // A copy in the middle splits the run; nothing is kept for messages past `count`.
    const copy = { ...conversation[2]! };
    const split = { messages: [conversation[0]!, conversation[1]!, copy, conversation[3]!, conversation[4]!, text('user', 'new')] };
    expect(joined(requestParts(split, conversation, kept))).toBe(JSON.stringify(split));
    // Nothing kept, an empty conversation, a body without messages.
    expect(joined(requestParts(body, [], MessageBytes.of([])))).toBe(JSON.stringify(body));
    const empty = { messages: [] as unknown[], model: 'm' };
    expect(joined(requestParts(empty, [], MessageBytes.of([])))).toBe(JSON.stringify(empty));
    const none = { model: 'm', skipped: undefined };
    expect(joined(requestParts(none, [], MessageBytes.of([])))).toBe(JSON.stringify(none));
    // The same content at another place is serialised, not taken from the kept bytes.
    const shifted = { messages: [conversation[1]!, conversation[0]!] };
    expect(joined(requestParts(shifted, conversation, kept))).toBe(JSON.stringify(shifted));
  });

  it('grows in place, and copies when an older state grows, so bytes being sent never change', () => {
    const a = MessageBytes.of(conversation.slice(0, 2));
    const sentFromA = joined(requestParts({ messages: conversation.slice(0, 2) }, conversation.slice(0, 2), a));
    const b = a.append(conversation.slice(2, 4));
    expect(b.count).toBe(4);
    // `a` again grows another way (a second continuation from the same point): its own buffer.
    const c = a.append([text('user', 'another way')]);
    const viewB = requestParts({ messages: conversation.slice(0, 4) }, conversation.slice(0, 4), b);
    expect(joined(viewB)).toBe(JSON.stringify({ messages: conversation.slice(0, 4) }));
    expect(joined(requestParts({ messages: [...conversation.slice(0, 2), text('user', 'another way')] }, [...conversation.slice(0, 2), text('user', 'x')], c))).toBe(
      JSON.stringify({ messages: [...conversation.slice(0, 2), text('user', 'another way')] }),
    );
    expect(joined(requestParts({ messages: conversation.slice(0, 2) }, conversation.slice(0, 2), a))).toBe(sentFromA);
    // And growing past the buffer moves to a larger one, keeping what was there.
    let big = b;
    const more: Anthropic.MessageParam[] = [];
    for (let i = 0; i < 40; i++) {
      const m = text(i % 2 === 0 ? 'user' : 'assistant', `${i} ${'z'.repeat(4_000)}`);
      more.push(m);
      big = big.append([m]);
    }
    const all = [...conversation.slice(0, 4), ...more];
    expect(joined(requestParts({ messages: all }, all, big))).toBe(JSON.stringify({ messages: all }));
    expect(joined(viewB)).toBe(JSON.stringify({ messages: conversation.slice(0, 4) }));
    expect(big.bytes).toBeGreaterThanOrEqual(big.length);
  });
});
