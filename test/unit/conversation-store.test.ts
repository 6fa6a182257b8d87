// The conversation store: content-addressed, immutable segments; a head names a whole
// conversation; writing the same segment twice is harmless; corruption is detected.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compactConversation, cutPoint, summaryRequest } from '../../activities/conversation-compaction';
import { withPromptCaching } from '../../activities/llm-cache';
import { appendSegment, clearSegmentCache, readConversation, segmentCacheSize, segmentHash, setSegmentCacheLimit, storeDir } from '../../activities/conversation-store';
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
  it('writes the same content to every store directory it is appended in (the cache is per location)', async () => {
    // Before: the cache was keyed by hash only, so the second store never got the segment
    // and a new worker (empty cache) reading it found "segment … is missing".
    const a = path.join(dir, 'workspace-a');
    const b = path.join(dir, 'workspace-b');
    const tools = [{ name: 'read_file' }, { name: 'run_command' }];
    const ha = await appendSegment(a, null, tools);
    const hb = await appendSegment(b, null, tools);
    expect(hb).toBe(ha);
    const h2 = await appendSegment(b, hb, [user('only in b')]);
    clearSegmentCache(); // a new worker process
    expect(await readConversation(b, h2)).toEqual([...tools, user('only in b')]);
    expect(await readConversation(a, ha)).toEqual(tools);
  });

  it('rewrites a segment that left the disk even while it is cached', async () => {
    const d = path.join(dir, 'wiped');
    const h = await appendSegment(d, null, [user('keep me')]);
    await fs.rm(d, { recursive: true, force: true });
    expect(await appendSegment(d, null, [user('keep me')])).toBe(h);
    clearSegmentCache();
    expect(await readConversation(d, h)).toEqual([user('keep me')]);
  });

  it('evicts the coldest segments at its limit and still serves every conversation from disk', async () => {
    const before = setSegmentCacheLimit(3);
    try {
      const a = path.join(dir, 'evict-a');
      const b = path.join(dir, 'evict-b');
      let ha: string | null = null;
      let hb: string | null = null;
      for (let i = 0; i < 12; i++) {
        ha = await appendSegment(a, ha, [user(`a${i}`)]);
        // The same first segments in b, appended after a's were cached (and evicted).
        hb = await appendSegment(b, hb, [user(i < 6 ? `a${i}` : `b${i}`)]);
        expect(segmentCacheSize()).toBeLessThanOrEqual(3);
      }
      const wantA = Array.from({ length: 12 }, (_, i) => user(`a${i}`));
      const wantB = Array.from({ length: 12 }, (_, i) => user(i < 6 ? `a${i}` : `b${i}`));
      expect(await readConversation(a, ha)).toEqual(wantA);
      expect(await readConversation(b, hb)).toEqual(wantB);
      clearSegmentCache();
      expect(await readConversation(b, hb)).toEqual(wantB);
      expect(segmentCacheSize()).toBeLessThanOrEqual(3);
    } finally {
      setSegmentCacheLimit(before);
    }
  });

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
    const calls: number[] = [];
    const out = await compactConversation(dir, conversation, 2_000, async (cut) => {
      calls.push(cut);
      return { text: 'SUMMARY', usage: { input_tokens: 1, output_tokens: 1 } };
    });
    expect(out).not.toBeNull();
    expect(calls).toEqual([12]);
    expect(out!.messages[0]!.role).toBe('user');
    expect(JSON.stringify(out!.messages[0])).toContain('SUMMARY');
    expect(out!.compaction.toMessages).toBeLessThan(out!.compaction.fromMessages);
    expect(await readConversation(dir, out!.head)).toEqual(out!.messages);
    expect(await compactConversation(dir, conversation, 1_000_000, () => Promise.reject(new Error('not called')))).toBeNull();
  });

  it('asks for the summary as a continuation of the turn\'s own request: same fields and breakpoints, one text block more', () => {
    const messages = withPromptCaching({ system: 'be brief', messages: conversation.slice(0, 11) }).messages;
    const body = { model: 'claude-sonnet-4-6', max_tokens: 4_096, stream: true as const, system: [{ type: 'text' as const, text: 'be brief' }], tools: [{ name: 'read_file', input_schema: { type: 'object' as const } }], thinking: { type: 'enabled' as const, budget_tokens: 2_048 }, tool_choice: { type: 'auto' as const }, messages };
    const request = summaryRequest(body, 8);
    expect(request.stream).toBe(false);
    expect({ ...request, messages: undefined, stream: undefined }).toEqual({ ...body, messages: undefined, stream: undefined });
    // Every message before the last as sent, breakpoints included; the last keeps its tool results first.
    expect(request.messages.slice(0, -1)).toEqual(messages.slice(0, -1));
    const last = request.messages.at(-1)!.content as Array<{ type: string; text?: string }>;
    expect(last.slice(0, -1)).toEqual(messages.at(-1)!.content);
    expect(last.at(-1)).toMatchObject({ type: 'text' });
    expect(last.at(-1)!.text).toContain('first 8 messages');
    expect(last.at(-1)!.text).toContain('turn 3');
    // After a final assistant message (pause_turn), the instruction is a user message of its own.
    const paused = summaryRequest({ ...body, messages: conversation.slice(0, 12) }, 8);
    expect(paused.messages).toHaveLength(13);
    expect(paused.messages.at(-1)!.role).toBe('user');
  });
});
