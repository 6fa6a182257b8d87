// The model activity's shared Anthropic client (activities/llm-client.ts): one per key and
// base URL, and each call's response bytes counted for that call alone, however many calls
// stream through the client at once. Real SDK, real fetch, the stand-in over loopback.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anthropicClient, countingBytes } from '../../activities/llm-client';
import { type Standin, startStandin } from '../../standin/server';
import { say } from '../fixtures/session-harness';

const KEY = 'sk-ant-test-client-3c9e';
let standin: Standin;

beforeAll(async () => {
  standin = await startStandin({
    scenario: {
      rules: [
        { match: { lastUserContains: 'short' }, reply: { ...say('ok'), delayMs: 5 } },
        { match: { lastUserContains: 'long' }, reply: { ...say('word '.repeat(2_000)), delayMs: 5, chunkSize: 200 } },
      ],
    },
  });
});
afterAll(async () => {
  await standin?.close();
});

describe('the shared model client', () => {
  it('is one client per key and base URL', () => {
    expect(anthropicClient(KEY, standin.url)).toBe(anthropicClient(KEY, standin.url));
    expect(anthropicClient(`${KEY}-other`, standin.url)).not.toBe(anthropicClient(KEY, standin.url));
    expect(anthropicClient(KEY, null)).not.toBe(anthropicClient(KEY, standin.url));
  });

  it('counts each call its own bytes while calls stream through it side by side', async () => {
    const client = anthropicClient(KEY, standin.url);
    const streamed = (text: string, onBytes: (bytes: number) => void) =>
      countingBytes(onBytes, async () => {
        const stream = await client.messages.create({ model: 'claude-sonnet-4-6', max_tokens: 16_000, stream: true, messages: [{ role: 'user', content: text }] });
        let answer = '';
        for await (const event of stream) if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') answer += event.delta.text;
        return answer;
      });
    const counts = { short: [0, 0] as [number, number], long: [0, 0] as [number, number] };
    const [short1, long1, short2, long2] = await Promise.all([
      streamed('a short one', (b) => (counts.short[0] += b)),
      streamed('a long one', (b) => (counts.long[0] += b)),
      streamed('another short one', (b) => (counts.short[1] += b)),
      streamed('another long one', (b) => (counts.long[1] += b)),
    ]);
    expect([short1, short2]).toEqual(['ok', 'ok']);
    expect(long1).toBe('word '.repeat(2_000));
    expect(long2).toBe(long1);
    // A long answer's bytes are its text and the stream's framing; a short one's only framing.
    for (const n of counts.long) expect(n).toBeGreaterThan(10_000);
    for (const n of counts.short) expect(n).toBeGreaterThan(0);
    for (const n of counts.short) expect(n).toBeLessThan(3_000);
    // Outside countingBytes nothing is counted, and nothing fails.
    const plain = await client.messages.create({ model: 'claude-sonnet-4-6', max_tokens: 16, messages: [{ role: 'user', content: 'short again' }] });
    expect(plain.content).toMatchObject([{ type: 'text', text: 'ok' }]);
  });
});
