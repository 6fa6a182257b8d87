// The conversation store: content-addressed, immutable segments; a head names a whole
// conversation; writing the same segment twice is harmless; corruption is detected.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compactConversation, cutPoint } from '../../activities/conversation-compaction';
import { appendSegment, clearSegmentCache, readConversation, segmentHash, storeDir } from '../../activities/conversation-store';
import { messagesOf } from '../../activities/llm-input';

let dir: string;

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-store-'));
});

afterAll(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

const user = (text: string) => ({ role: 'user', content: [{ type: 'text', text }] });
const assistant = (text: string) => ({ role: 'assistant', content: [{ type: 'text', text }] });

describe('conversation store', () => {
  it('chains segments and reads the whole conversation back, oldest first', async () => {
    const h1 = await appendSegment(dir, null, [user('one')]);
    const h2 = await appendSegment(dir, h1, [assistant('two'), user('three')]);
    expect(h1).toMatch(/^[0-9a-f]{64}$/);
    expect(await appendSegment(dir, h2, [])).toBe(h2);
    clearSegmentCache();
    expect(await readConversation(dir, h2)).toEqual([user('one'), assistant('two'), user('three')]);
    expect(await readConversation(dir, h1)).toEqual([user('one')]);
    expect(await readConversation(dir, null)).toEqual([]);
  });

  it('is idempotent: the same segment twice has the same id and the same bytes', async () => {
    const a = await appendSegment(dir, null, [user('same')]);
    clearSegmentCache();
    const b = await appendSegment(dir, null, [user('same')]);
    expect(b).toBe(a);
    expect(segmentHash({ parent: null, messages: [user('same')] })).toBe(a);
  });

  it('refuses a corrupt or missing segment with a clear error', async () => {
    const h = (await appendSegment(dir, null, [user('to corrupt')]))!;
    await fs.writeFile(path.join(dir, 'segments', h.slice(0, 2), `${h}.json`), JSON.stringify({ parent: null, messages: [user('tampered')] }));
    clearSegmentCache();
    await expect(readConversation(dir, h)).rejects.toThrow(/is corrupt/);
    await expect(readConversation(dir, 'f'.repeat(64))).rejects.toThrow(/is missing/);
    await expect(readConversation(dir, '../etc/passwd')).rejects.toThrow(/not a segment id/);
  });

  it('resolves a ref conversation for the model activity; KEEL_STORE_DIR wins over the requested directory', async () => {
    const other = path.join(dir, 'elsewhere');
    const first = await messagesOf({ kind: 'ref', store: other, head: null, append: [{ role: 'user', content: 'hi' }] }, {});
    expect(first.messages).toEqual([{ role: 'user', content: 'hi' }]);
    const next = await messagesOf(
      { kind: 'ref', store: '/nonexistent', head: first.head ?? null, append: [{ role: 'assistant', content: 'hello' }, { role: 'user', content: 'again' }] },
      { KEEL_STORE_DIR: other },
    );
    expect(next.messages.map((m) => m.content)).toEqual(['hi', 'hello', 'again']);
    expect(storeDir('/x', { KEEL_STORE_DIR: other })).toBe(other);
    expect(storeDir('/x', {})).toBe('/x');
    const inline = await messagesOf({ kind: 'inline', messages: [{ role: 'user', content: 'x' }] });
    expect(inline.head).toBeUndefined();
  });
});

describe('compaction', () => {
  const big = 'x'.repeat(4_000);
  const turn = (n: number) => [
    { role: 'user' as const, content: `turn ${n}` },
    { role: 'assistant' as const, content: [{ type: 'tool_use' as const, id: `t${n}`, name: 'read_file', input: {} }] },
    { role: 'user' as const, content: [{ type: 'tool_result' as const, tool_use_id: `t${n}`, content: big }] },
    { role: 'assistant' as const, content: `done ${n}` },
  ];
  const conversation = [...turn(1), ...turn(2), ...turn(3), { role: 'user' as const, content: 'turn 4' }];

  it('cuts only where a turn begins, never inside a tool exchange', () => {
    expect(cutPoint(conversation, 100)).toBe(12);
    expect(cutPoint(conversation, 1_200)).toBe(8);
    expect(cutPoint([{ role: 'user', content: 'only' }], 10)).toBeNull();
  });

  it('summarizes the older turns, keeps the newest, and stores the new chain', async () => {
    const calls: string[] = [];
    const out = await compactConversation(dir, conversation, 2_000, async (_system, text) => {
      calls.push(text);
      return { text: 'SUMMARY', usage: { input_tokens: 1, output_tokens: 1 } };
    });
    expect(out).not.toBeNull();
    expect(calls[0]).toContain('USER:\nturn 1');
    expect(out!.messages[0]!.role).toBe('user');
    expect(JSON.stringify(out!.messages[0])).toContain('SUMMARY');
    expect(out!.compaction.toMessages).toBeLessThan(out!.compaction.fromMessages);
    expect(await readConversation(dir, out!.head)).toEqual(out!.messages);
    expect(await compactConversation(dir, conversation, 1_000_000, () => Promise.reject(new Error('not called')))).toBeNull();
  });
});
