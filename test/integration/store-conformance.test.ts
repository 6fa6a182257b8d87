// One conformance suite for every conversation store backend: the local directory and
// PostgreSQL (a real server: its own cluster from initdb on a free port). Objects are
// written once (first write wins, also when many race), the identity marker is one id for
// every worker, conversations chain and read back from a fresh process's view, and every
// kind of damage is a ConversationStoreError naming the segment, the store and the cause.
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendSegment, checkStoreIdentity, clearIdentityCache, clearSegmentCache, readConversation, segmentHash, storeIdentity } from '../../activities/conversation-store';
import { ConversationStoreError } from '../../activities/store/errors';
import { IDENTITY_KEY, type ObjectStore, segmentKey } from '../../activities/store/interface';
import { LocalDirectoryStore } from '../../activities/store/local';
import { closeStores, openStore, storeConfig } from '../../activities/store/open';
import { PostgresStore } from '../../activities/store/postgres';
import { startPostgres, type TestPostgres } from '../helpers/postgres';

const run = promisify(execFile);

interface Backend {
  name: string;
  /** A new, empty store; `again()` opens the same place as a second worker would. */
  fresh(): Promise<{
    store: ObjectStore;
    again: () => ObjectStore;
    remove: (key: string) => Promise<void>;
    replace: (key: string, body: Buffer) => Promise<void>;
    readOnly: () => Promise<ObjectStore>;
  }>;
}

let pg: TestPostgres;
let tmp: string;
let n = 0;
const opened: ObjectStore[] = [];
const track = <S extends ObjectStore>(s: S): S => (opened.push(s), s);

beforeAll(async () => {
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-conformance-'));
  pg = await startPostgres();
}, 120_000);

afterAll(async () => {
  await Promise.allSettled(opened.map((s) => s.close()));
  await closeStores();
  await pg?.stop();
  await fs.rm(tmp, { recursive: true, force: true });
});

const localFile = (dir: string, key: string) =>
  key === IDENTITY_KEY ? path.join(dir, 'keel-store.json') : path.join(dir, 'segments', key.slice(9, 11), `${key.slice(9)}.json`);

const backends: Backend[] = [
  {
    name: 'local directory',
    async fresh() {
      const dir = path.join(tmp, `local-${++n}`);
      return {
        store: new LocalDirectoryStore(dir),
        again: () => new LocalDirectoryStore(dir),
        remove: (key) => fs.rm(localFile(dir, key), { force: true }),
        replace: (key, body) => fs.writeFile(localFile(dir, key), body),
        // A read-only file system, as root too (chmod does not stop root): a tmpfs remounted ro.
        async readOnly() {
          const mnt = path.join(tmp, `ro-${n}`);
          await fs.mkdir(mnt);
          await run('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mnt]);
          await fs.cp(dir, mnt, { recursive: true });
          await run('mount', ['-o', 'remount,ro', mnt]);
          unmounts.push(mnt);
          return new LocalDirectoryStore(mnt);
        },
      };
    },
  },
  {
    name: 'postgres',
    async fresh() {
      const db = `conf_${++n}`;
      const url = await pg.createDatabase(db);
      return {
        store: track(new PostgresStore(url)),
        again: () => track(new PostgresStore(url)),
        remove: async (key) => void (await pg.sql(db, `DELETE FROM keel_store_objects WHERE key = '${key}'`)),
        replace: async (key, body) => void (await pg.sql(db, `UPDATE keel_store_objects SET body = decode('${body.toString('hex')}', 'hex') WHERE key = '${key}'`)),
        async readOnly() {
          await pg.sql('postgres', `ALTER DATABASE ${db} SET default_transaction_read_only = on`);
          return track(new PostgresStore(url));
        },
      };
    },
  },
];
const unmounts: string[] = [];
afterAll(async () => {
  for (const mnt of unmounts) await run('umount', [mnt]).catch(() => {});
});

const user = (text: string) => ({ role: 'user', content: [{ type: 'text', text }] });

async function storeError(promise: Promise<unknown>): Promise<ConversationStoreError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConversationStoreError);
  return error as ConversationStoreError;
}

describe.each(backends)('conversation store conformance: $name', (backend) => {
  it('writes an object once: the first write wins, also when twenty writers race', async () => {
    const { store, again } = await backend.fresh();
    const key = segmentKey('a'.repeat(64));
    expect(await store.get(key)).toBeNull();
    expect(await store.has(key)).toBe(false);
    await store.putIfAbsent(key, Buffer.from('first'));
    await store.putIfAbsent(key, Buffer.from('second'));
    expect((await store.get(key))?.toString()).toBe('first');
    expect(await again().has(key)).toBe(true);

    const raced = segmentKey('b'.repeat(64));
    await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? store : again()).putIfAbsent(raced, Buffer.from(`writer ${i}`))));
    const winner = (await store.get(raced))?.toString();
    expect(winner).toMatch(/^writer \d+$/);
    expect((await again().get(raced))?.toString()).toBe(winner);
  });

  it('has one identity for every worker: written by the first, read by the others', async () => {
    const { store, again } = await backend.fresh();
    const ids = await Promise.all([storeIdentity(store), storeIdentity(again()), storeIdentity(again())]);
    expect(new Set(ids.map((i) => i.id)).size).toBe(1);
    expect(ids.filter((i) => i.created)).toHaveLength(1);
    expect((await storeIdentity(again())).id).toBe(ids[0].id);
    await expect(checkStoreIdentity(again(), ids[0].id)).resolves.toBeUndefined();
    const foreign = await storeError(checkStoreIdentity(again(), 'another-store-id'));
    expect(foreign.fault).toBe('foreign');
    expect(foreign.repairable).toBe(false);
    expect(foreign.message).toContain(`is ${ids[0].id}, but the session's is another-store-id`);
  });

  it('reads the identity marker once in a while, not once per model call; a marker removed under it comes back as the session\'s id', async () => {
    const { store, remove } = await backend.fresh();
    const { id } = await storeIdentity(store);
    let reads = 0;
    // The same store, under a name of its own (so nothing is known of it yet), counting reads of the marker.
    const counted: ObjectStore = {
      kind: store.kind,
      where: `${store.where}#counted`,
      get: (key) => ((reads += key === IDENTITY_KEY ? 1 : 0), store.get(key)),
      putIfAbsent: (key, body) => store.putIfAbsent(key, body),
      has: (key) => store.has(key),
      close: async () => {},
    };
    for (let call = 0; call < 20; call++) await checkStoreIdentity(counted, id);
    expect(reads).toBe(1);
    expect((await storeError(checkStoreIdentity(counted, 'another-store-id'))).fault).toBe('foreign');
    expect(reads).toBe(1);
    // Wiped: once what was read has expired, the next call puts the session's id back.
    await remove(IDENTITY_KEY);
    clearIdentityCache();
    await checkStoreIdentity(counted, id);
    clearIdentityCache();
    expect(await storeIdentity(store)).toEqual({ id, created: false });
  });

  it('chains segments and reads the conversation back from another worker', async () => {
    const { store, again } = await backend.fresh();
    const h1 = await appendSegment(store, null, [user('one')]);
    const h2 = await appendSegment(store, h1, [user('two'), user('three')]);
    expect(await appendSegment(again(), h1, [user('two'), user('three')])).toBe(h2);
    clearSegmentCache();
    expect(await readConversation(again(), h2)).toEqual([user('one'), user('two'), user('three')]);
  });

  it('names the segment, the store and the cause of every damage', async () => {
    const { store, again, remove, replace } = await backend.fresh();
    const h1 = await appendSegment(store, null, [user('one')]);
    const h2 = await appendSegment(store, h1, [user('two')]);
    const h3 = await appendSegment(store, h2, [user('three')]);
    const body = (await store.get(segmentKey(h3!)))!;

    // Truncated: half the bytes.
    await replace(segmentKey(h3!), body.subarray(0, Math.floor(body.length / 2)));
    clearSegmentCache();
    let error = await storeError(readConversation(again(), h3));
    expect(error.fault).toBe('corrupt');
    expect(error.segment).toBe(h3);
    expect(error.message).toContain(h3!);
    expect(error.message).toContain(store.where);
    expect(error.repairable).toBe(true);

    // Foreign: a valid segment of other content under this name.
    const other = { parent: null, messages: [user('not this conversation')] };
    await replace(segmentKey(h3!), Buffer.from(JSON.stringify(other)));
    clearSegmentCache();
    error = await storeError(readConversation(again(), h3));
    expect(error.fault).toBe('corrupt');
    expect(error.message).toMatch(/does not match its name/);
    expect(error.code).toBe('hash mismatch');
    expect(segmentHash(other)).not.toBe(h3);

    // Deleted: a segment in the middle of the chain.
    await replace(segmentKey(h3!), body);
    await remove(segmentKey(h2!));
    clearSegmentCache();
    error = await storeError(readConversation(again(), h3));
    expect(error.fault).toBe('missing');
    expect(error.segment).toBe(h2);
    expect(error.message).toBe(`conversation segment ${h2} in ${store.kind === 'local' ? 'local directory' : 'store'} ${store.where}: is missing`);

    // A new segment on the lost parent is refused, not written where nobody can read it back.
    error = await storeError(appendSegment(again(), h2, [user('four')]));
    expect(error.fault).toBe('missing');
    expect(error.segment).toBe(h2);
    expect(error.failure().type).toBe('ConversationStoreError');
    expect(error.failure().nonRetryable).toBe(true);
  });

  it('says it cannot write to a read-only store, and why', async () => {
    const backendStore = await backend.fresh();
    await storeIdentity(backendStore.store);
    const h1 = await appendSegment(backendStore.store, null, [user('one')]);
    const readOnly = await backendStore.readOnly();
    clearSegmentCache();
    expect(await readConversation(readOnly, h1)).toEqual([user('one')]);
    const error = await storeError(appendSegment(readOnly, h1, [user('two')]));
    expect(error.fault).toBe('unwritable');
    expect(error.repairable).toBe(false);
    expect(error.code).toBe(backendStore.store.kind === 'local' ? 'EROFS' : '25006 read_only_sql_transaction');
    expect(error.message).toContain(readOnly.where);
  });
});

describe('local directory: a full disk', () => {
  it('fails with ENOSPC and leaves no temporary file behind', async () => {
    const mnt = path.join(tmp, 'full');
    await fs.mkdir(mnt);
    await run('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', mnt]);
    unmounts.push(mnt);
    const store = new LocalDirectoryStore(mnt);
    const h1 = await appendSegment(store, null, [user('small')]);
    const error = await storeError(appendSegment(store, h1, [user('x'.repeat(200_000))]));
    expect(error.fault).toBe('unwritable');
    expect(error.code).toBe('ENOSPC');
    const files = await fs.readdir(mnt, { recursive: true });
    expect(files.filter((f) => String(f).endsWith('.tmp'))).toEqual([]);
  });
});

describe('store configuration', () => {
  it('chooses the backend from the worker environment and refuses an unknown scheme in one line', () => {
    expect(storeConfig({})).toEqual({ kind: 'local', dir: null });
    expect(storeConfig({ KEEL_STORE_DIR: '/srv/keel' })).toEqual({ kind: 'local', dir: '/srv/keel' });
    expect(storeConfig({ KEEL_STORE_URL: 'postgres://keel:secret@db/keel', KEEL_STORE_DIR: '/x' })).toEqual({ kind: 'postgres', url: 'postgres://keel:secret@db/keel' });
    expect(() => storeConfig({ KEEL_STORE_URL: 's3://bucket/prefix' })).toThrow(/^KEEL_STORE_URL: the conversation store "s3" is not supported; use postgres:\/\/… or leave it unset/);
    const store = openStore('/ignored', { KEEL_STORE_URL: 'postgres://keel:secret@db.example:5432/keel' });
    expect(store.kind).toBe('postgres');
    // Never the password.
    expect(store.where).toBe('postgres://keel@db.example:5432/keel');
  });
});
