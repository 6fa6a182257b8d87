// A large tool result kept once in the conversation store (activities/stored-outputs.ts):
// the model is sent the same bytes as when it travelled whole; a short one is left inline; a
// result the store cannot take stays whole; one the store lost is read as its preview, saying so.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clearSegmentCache } from '../../activities/conversation-store';
import { messagesOf } from '../../activities/llm-input';
import { storeLargeOutput } from '../../activities/stored-outputs';
import { STORE_OUTPUT_ABOVE_BYTES } from '../../machines/stored-output';
import { toolOk } from '../../machines/tool-result';

let dir: string;
const env = {} as NodeJS.ProcessEnv;

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-stored-'));
});
afterAll(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

const big = Array.from({ length: 500 }, (_, i) => `line ${i + 1}: ${'é'.repeat(30)}`).join('\n');
const ask: Anthropic.MessageParam = { role: 'user', content: [{ type: 'text', text: 'read it' }] };
const use: Anthropic.MessageParam = { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'a' } }] };
const answer = (content: string, stored?: unknown) => ({ role: 'user' as const, content: [{ type: 'tool_result' as const, tool_use_id: 'toolu_1', content, is_error: false, ...(stored !== undefined ? { keel_stored: stored } : {}) }] });

describe('tool results stored once', () => {
  it('a large result: history gets a preview and a reference; the request is byte for byte the one with the whole text', async () => {
    const store = path.join(dir, 'a');
    const kept = await storeLargeOutput(toolOk(big), { store }, env);
    expect(kept.stored?.bytes).toBe(Buffer.byteLength(big, 'utf8'));
    expect(kept.content.length).toBeLessThan(1_200);
    expect(kept.content).toContain('line 1:');
    expect(kept.content).not.toContain('line 500:');
    clearSegmentCache(); // another worker reads it
    const stored = await messagesOf({ kind: 'ref', store, head: null, append: [ask, use, answer(kept.content, kept.stored)] }, env);
    const whole = await messagesOf({ kind: 'ref', store: path.join(dir, 'b'), head: null, append: [ask, use, answer(big)] }, env);
    expect(JSON.stringify(stored.messages)).toBe(JSON.stringify(whole.messages));
  });

  it('a short result, or no store named (a run from before), stays inline', async () => {
    const short = toolOk('x'.repeat(STORE_OUTPUT_ABOVE_BYTES));
    expect(await storeLargeOutput(short, { store: path.join(dir, 'c') }, env)).toBe(short);
    const large = toolOk(big);
    expect(await storeLargeOutput(large, undefined, env)).toBe(large);
  });

  it('a store that cannot take it leaves the result whole', async () => {
    const file = path.join(dir, 'not-a-directory');
    await fs.writeFile(file, 'in the way');
    const warnings: string[] = [];
    const large = toolOk(big);
    expect(await storeLargeOutput(large, { store: file }, env, (message) => warnings.push(message))).toBe(large);
    expect(warnings).toHaveLength(1);
  });

  it('a stored result the store lost is read as its preview, saying it was lost', async () => {
    const store = path.join(dir, 'd');
    const kept = await storeLargeOutput(toolOk(`${big}\nlost one`), { store }, env);
    const id = kept.stored!.id;
    await fs.rm(path.join(store, 'segments', id.slice(0, 2), `${id}.json`));
    clearSegmentCache();
    const { messages } = await messagesOf({ kind: 'ref', store, head: null, append: [ask, use, answer(kept.content, kept.stored)] }, env);
    const block = (messages[2]!.content as Anthropic.ToolResultBlockParam[])[0]!;
    expect(block).not.toHaveProperty('keel_stored');
    expect(block.content).toMatch(/^line 1:/);
    expect(block.content).toMatch(/was lost from the conversation store/);
  });
});
