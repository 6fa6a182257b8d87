// A session's conversation kept warm on the worker (activities/warm-conversations.ts): a call
// whose parent is the head the session's last call ended at adds only its new messages; every
// other case — another worker, a restart, a rewind or a fork, another store, a compaction — gives
// the messages a cold read of the store gives, byte for byte.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clearSegmentCache } from '../../activities/conversation-store';
import { messagesOf, rememberCompacted } from '../../activities/llm-input';
import { storeFor } from '../../activities/conversation-store';
import { storeLargeOutput } from '../../activities/stored-outputs';
import { WarmConversations } from '../../activities/warm-conversations';
import { toolOk } from '../../machines/tool-result';

let dir: string;
const env = {} as NodeJS.ProcessEnv;
beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-warm-'));
});
afterAll(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

const user = (text: string): Anthropic.MessageParam => ({ role: 'user', content: [{ type: 'text', text }] });
const assistant = (text: string): Anthropic.MessageParam => ({ role: 'assistant', content: [{ type: 'text', text }] });
const use = (id: string): Anthropic.MessageParam => ({ role: 'assistant', content: [{ type: 'tool_use', id, name: 'read_file', input: { path: 'a' } }] });
const result = (id: string, content: string, stored?: unknown): Anthropic.MessageParam =>
  ({ role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content, is_error: false, ...(stored !== undefined ? { keel_stored: stored } : {}) }] });

/** What a cold worker sends for `head`: read from the store, nothing remembered. */
async function cold(store: string, head: string | null): Promise<string> {
  clearSegmentCache();
  return JSON.stringify((await messagesOf({ kind: 'ref', store, head, append: [] }, env)).messages);
}

describe('a warm conversation per session', () => {
  it('appends on a hit and reads the store on every miss, the same bytes either way', async () => {
    const store = path.join(dir, 'store');
    const cache = new WarmConversations();
    const warm = { session: 'wf/run', cache };
    const call = async (head: string | null, append: Anthropic.MessageParam[], key = warm) => messagesOf({ kind: 'ref', store, head, append }, env, key);
    const big = await storeLargeOutput(toolOk('row\n'.repeat(3_000)), { store }, env);

    let r = await call(null, [user('one'), use('t1')]);
    expect(r.warm).toBe(false); // the first call: nothing warm yet
    const h1 = r.head!;
    r = await call(h1, [result('t1', big.content, big.stored), assistant('read it'), user('two')]);
    expect(r.warm).toBe(true);
    expect(JSON.stringify(r.messages)).toBe(await cold(store, r.head!));
    const h2 = r.head!;
    r = await call(h2, [assistant('two done'), user('three')]);
    expect(r.warm).toBe(true);
    const h3 = r.head!;
    expect(JSON.stringify(r.messages)).toBe(await cold(store, h3));

    // A rewind (or a fork): the parent is an earlier head, not the remembered one.
    r = await call(h1, [result('t1', big.content, big.stored), assistant('read it'), user('two, again')]);
    expect(r.warm).toBe(false);
    expect(JSON.stringify(r.messages)).toBe(await cold(store, r.head!));
    const rewound = r.head!;

    // Another worker (its own cache), or this one restarted: read from the store.
    r = await call(rewound, [assistant('ok'), user('four')], { session: 'wf/run', cache: new WarmConversations() });
    expect(r.warm).toBe(false);
    expect(JSON.stringify(r.messages)).toBe(await cold(store, r.head!));
    cache.clear();
    r = await call(h3, [assistant('three done')]);
    expect(r.warm).toBe(false);
    expect(JSON.stringify(r.messages)).toBe(await cold(store, r.head!));

    // Another store (another identity, a worker configured elsewhere): the same head is not trusted.
    const other = path.join(dir, 'other');
    await fs.cp(store, other, { recursive: true });
    const elsewhere = await messagesOf({ kind: 'ref', store: other, head: r.head!, append: [user('five')] }, env, warm);
    expect(elsewhere.warm).toBe(false);

    // A compaction: the compacted head is remembered in the conversation's place.
    const compacted = [user('(Summary) earlier turns'), assistant('three done')];
    const compactedHead = (await messagesOf({ kind: 'ref', store, head: null, append: compacted }, env)).head!;
    rememberCompacted(warm, storeFor(store, env), compactedHead, compacted);
    r = await call(compactedHead, [user('six')]);
    expect(r.warm).toBe(true);
    expect(JSON.stringify(r.messages)).toBe(await cold(store, r.head!));
  });

  it('is bounded by bytes: the least recently used session goes first', () => {
    const cache = new WarmConversations(10_000);
    const a = Array.from({ length: 10 }, (_, i) => user(`a${i} ${'x'.repeat(400)}`));
    cache.set('a', 's', 'h'.repeat(64), a);
    cache.set('b', 's', 'g'.repeat(64), a);
    expect(cache.size).toBe(2);
    expect(cache.get('a', 's', 'h'.repeat(64))).toBe(a); // a is now the most recent
    cache.set('c', 's', 'f'.repeat(64), a);
    expect(cache.get('b', 's', 'g'.repeat(64))).toBeUndefined();
    expect(cache.get('a', 's', 'h'.repeat(64))).toBe(a);
    expect(cache.bytes).toBeLessThanOrEqual(10_000);
    // A conversation larger than the whole bound is not kept at all.
    cache.set('huge', 's', 'e'.repeat(64), Array.from({ length: 40 }, () => a[0]!));
    expect(cache.get('huge', 's', 'e'.repeat(64))).toBeUndefined();
  });

  it('keeps its messages\' bytes past a size, made once per message, counted against the bound', () => {
    const cache = new WarmConversations(1_000_000, 2_000);
    const small = [user('one'), assistant('two')];
    cache.set('s', 'st', 'a'.repeat(64), small);
    // Below the size: nothing kept, the SDK serialises the request as before.
    expect(cache.encoded('s', small)).toBeUndefined();
    const bytesSmall = cache.bytes;

    const grown = small.concat([user('x'.repeat(3_000))]);
    cache.set('s', 'st', 'b'.repeat(64), grown, grown.slice(2), small);
    const kept = cache.encoded('s', grown)!;
    expect(kept.count).toBe(3);
    expect(kept.range(0, 3).toString('utf8')).toBe(`${grown.map((m) => JSON.stringify(m)).join(',')},`);
    // The messages and their bytes both count.
    expect(cache.bytes).toBeGreaterThan(2 * (bytesSmall + 3_000));

    // Going on: the kept bytes are carried (the same buffer), only the new message is made.
    const more = grown.concat([assistant('ok ✓')]);
    cache.set('s', 'st', 'c'.repeat(64), more, more.slice(3), grown);
    const next = cache.encoded('s', more)!;
    expect(next.count).toBe(4);
    expect(next.range(0, 3).buffer).toBe(kept.range(0, 3).buffer);
    expect(next.range(3, 4).toString('utf8')).toBe(`${JSON.stringify(more[3])},`);

    // Only for the very array held: another one (a rewind's, a copy) gets nothing; nor when off.
    expect(cache.encoded('s', [...more])).toBeUndefined();
    expect(cache.encoded('other', more)).toBeUndefined();
    cache.enabled = false;
    expect(cache.encoded('s', more)).toBeUndefined();
  });
});
