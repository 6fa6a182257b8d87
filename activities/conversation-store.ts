// The conversation store: a session's messages as immutable, content-addressed segments
// in a store the activities share. A segment is `{ parent, messages }` named by the
// SHA-256 of its canonical JSON, so writing one twice (an activity retry, a replayed
// workflow) is harmless, and a conversation is named by its last segment (the head).
// Workflows pass the model activity a head plus the messages added since, never the whole
// conversation: workflow history then grows with each step's new messages only.
//
// Where segments live is the backend's business (activities/store/): a local directory
// (KEEL_STORE_DIR, else the one the workflow names, by default `<workspace>/.keel/store`)
// or PostgreSQL (KEEL_STORE_URL) shared by a fleet. This layer hashes, seals, caches and
// walks chains once for every backend, and turns whatever goes wrong into a
// ConversationStoreError naming the segment, the store and the cause.
import { createHash, randomUUID } from 'node:crypto';
import path from 'node:path';
import { decryptBytes, encryptBytes, type EncryptionKey, loadEncryptionKeys } from '../shared/encryption';
import { ConversationStoreError, ioFault } from './store/errors';
import { IDENTITY_KEY, type ObjectStore, segmentKey } from './store/interface';
import { LocalDirectoryStore } from './store/local';
import { openStore } from './store/open';
import { warmConversations } from './warm-conversations';

/**
 * With KEEL_ENCRYPTION_KEYS (or KEEL_ENCRYPTION_KEY_FILE) set, segments are written sealed
 * with the same keys as Temporal's payloads (AES-256-GCM, newest key; any listed key
 * reads). A segment keeps its name (the SHA-256 of its plain content, which the workflow
 * history holds anyway) and is checked against it once decrypted. Segments written before
 * encryption was turned on stay readable as they are.
 */
export type StoreKeys = readonly EncryptionKey[] | null;
const SEALED = 'keel-sealed-segment/1';
const keysBySetting = new Map<string, Promise<StoreKeys>>();

/** The store's keys from the worker's environment (loaded once per setting). */
export function storeKeys(env: NodeJS.ProcessEnv = process.env): Promise<StoreKeys> {
  const setting = `${env.KEEL_ENCRYPTION_KEYS ?? ''}\0${env.KEEL_ENCRYPTION_KEY_FILE ?? ''}`;
  let keys = keysBySetting.get(setting);
  if (!keys) {
    keys = loadEncryptionKeys(env);
    keysBySetting.set(setting, keys);
  }
  return keys;
}

async function seal(keys: StoreKeys, plain: string): Promise<string> {
  if (!keys) return plain;
  const { keyId, data } = await encryptBytes(keys, Buffer.from(plain, 'utf8'));
  return JSON.stringify({ keel: SEALED, key: keyId, data: Buffer.from(data).toString('base64') });
}

async function unseal(keys: StoreKeys, text: string, where: string): Promise<string> {
  const parsed = JSON.parse(text) as { keel?: unknown; key?: unknown; data?: unknown };
  if (parsed.keel !== SEALED) return text;
  if (!keys) throw new Error(`conversation segment ${where} is encrypted, and this worker has no KEEL_ENCRYPTION_KEYS`);
  // A key this worker does not hold says so by name (decryptBytes), as does a tampered segment.
  return Buffer.from(await decryptBytes(keys, String(parsed.key), Buffer.from(String(parsed.data), 'base64'))).toString('utf8');
}

export interface StoredSegment<M = unknown> {
  parent: string | null;
  messages: M[];
}

const HEAD = /^[0-9a-f]{64}$/;

/** A store, or a directory (the local backend) as callers that predate backends name it. */
export type StoreTarget = ObjectStore | string;

const directories = new Map<string, ObjectStore>();
function resolveTarget(target: StoreTarget): ObjectStore {
  if (typeof target !== 'string') return target;
  let store = directories.get(target);
  if (!store) directories.set(target, (store = new LocalDirectoryStore(target)));
  return store;
}

/** Where segments live for a request naming `requested`: the worker's configured store wins. */
export function storeFor(requested: string, env: NodeJS.ProcessEnv = process.env): ObjectStore {
  return openStore(requested, env);
}

/** Where segments live, as a directory: the worker's KEEL_STORE_DIR wins over what the caller named (the local backend). */
export function storeDir(requested: string, env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env.KEEL_STORE_DIR?.trim();
  return path.resolve(fromEnv ? fromEnv : requested);
}

export function segmentHash(segment: StoredSegment): string {
  return createHash('sha256').update(JSON.stringify({ parent: segment.parent, messages: segment.messages })).digest('hex');
}

/**
 * Segments read are cached so a long session reads each from its store once. The key is
 * the store AND the hash: the same content (tool definitions are identical for every
 * session) lives once per store, and a segment known in one store says nothing about
 * another. The cache only ever saves a read; whether a segment is stored is asked of the
 * store (a cache keyed by content alone skipped writes to a second store, and a new worker
 * then found "segment … is missing").
 */
const cache = new Map<string, StoredSegment>();
let cacheLimit = 20_000;
const cacheKey = (store: ObjectStore, hash: string) => `${store.kind}\0${store.where}\0${hash}`;

function remember(store: ObjectStore, hash: string, segment: StoredSegment): void {
  const key = cacheKey(store, hash);
  cache.delete(key);
  while (cache.size >= cacheLimit) {
    const oldest = cache.keys().next().value;
    if (oldest === undefined) break;
    cache.delete(oldest);
  }
  cache.set(key, segment);
}

/** Stores `messages` after `parent` and returns the new head (the parent itself when there is nothing to add). */
export async function appendSegment<M>(target: StoreTarget, parent: string | null, messages: readonly M[], keys: StoreKeys = null): Promise<string | null> {
  if (messages.length === 0) return parent;
  const store = resolveTarget(target);
  const segment: StoredSegment = { parent, messages: [...messages] };
  const hash = segmentHash(segment);
  // A new segment on a parent the store no longer has (a wiped directory, a lost row) would
  // be a conversation nobody can read back: say so now, while the workflow can repair it.
  // One existence check per append, on the store, not in memory: right after any restart,
  // eviction or wipe too. The segment itself is not looked for first: nearly every append
  // is new, and writing one that exists leaves it as it is (first write wins).
  if (parent !== null) {
    let parentStored: boolean;
    try {
      parentStored = await store.has(segmentKey(parent));
    } catch (error) {
      throw ioFault('read', store, parent, error);
    }
    if (!parentStored) throw missing(store, parent, 'is missing (the segment a new one follows)');
  }
  try {
    await store.putIfAbsent(segmentKey(hash), Buffer.from(await seal(keys, JSON.stringify(segment)), 'utf8'));
  } catch (error) {
    throw ioFault('write', store, hash, error);
  }
  remember(store, hash, segment);
  return hash;
}

function missing(store: ObjectStore, hash: string, detail = 'is missing'): ConversationStoreError {
  return new ConversationStoreError({ cause: 'missing', segment: hash, store, detail });
}

async function readSegment(store: ObjectStore, hash: string, keys: StoreKeys): Promise<StoredSegment> {
  if (!HEAD.test(hash)) throw new ConversationStoreError({ cause: 'corrupt', segment: null, store, detail: `not a segment id: ${JSON.stringify(hash).slice(0, 80)}` });
  const cached = cache.get(cacheKey(store, hash));
  if (cached) {
    // Most recently used last: eviction takes the coldest.
    remember(store, hash, cached);
    return cached;
  }
  let body: Buffer | null;
  try {
    body = await store.get(segmentKey(hash));
  } catch (error) {
    throw ioFault('read', store, hash, error);
  }
  if (body === null) throw missing(store, hash);
  const corrupt = (detail: string, error?: unknown) =>
    new ConversationStoreError({ cause: 'corrupt', segment: hash, store, detail, code: error === undefined ? 'hash mismatch' : 'not JSON', ...(error !== undefined ? { error } : {}) });
  let plain: string;
  try {
    plain = await unseal(keys, body.toString('utf8'), `${hash} in ${store.where}`);
  } catch (error) {
    if (error instanceof SyntaxError) throw corrupt(`is corrupt (${error.message}; ${body.length} bytes)`, error);
    throw new ConversationStoreError({ cause: 'undecryptable', segment: hash, store, detail: `cannot be decrypted: ${(error as Error).message}`, error });
  }
  let segment: StoredSegment;
  try {
    segment = JSON.parse(plain) as StoredSegment;
  } catch (error) {
    throw corrupt(`is corrupt (${(error as Error).message})`, error);
  }
  const shaped = segment !== null && typeof segment === 'object' && Array.isArray(segment.messages) && (segment.parent === null || (typeof segment.parent === 'string' && HEAD.test(segment.parent)));
  if (!shaped || segmentHash(segment) !== hash) throw corrupt('is corrupt (its content does not match its name)');
  remember(store, hash, segment);
  return segment;
}

/** Every message of the conversation that ends at `head`, oldest first. */
export async function readConversation<M = unknown>(target: StoreTarget, head: string | null, keys: StoreKeys = null): Promise<M[]> {
  const store = resolveTarget(target);
  const chunks: unknown[][] = [];
  const seen = new Set<string>();
  for (let at = head; at !== null; ) {
    if (seen.has(at)) throw new ConversationStoreError({ cause: 'corrupt', segment: at, store, detail: 'loops back on itself' });
    seen.add(at);
    const segment = await readSegment(store, at, keys);
    chunks.push(segment.messages);
    at = segment.parent;
  }
  return chunks.reverse().flat() as M[];
}

/** Test hook: forget cached segments (so reads hit the store), and the warm conversations made of them, as a restart does. */
export function clearSegmentCache(): void {
  cache.clear();
  warmConversations.clear();
}

/** Test hook: how many segments the cache holds at most (returns the previous limit). */
export function setSegmentCacheLimit(limit: number): number {
  const before = cacheLimit;
  cacheLimit = Math.max(1, limit);
  while (cache.size > cacheLimit) cache.delete(cache.keys().next().value!);
  return before;
}

export function segmentCacheSize(): number {
  return cache.size;
}

/**
 * The identity read last from each store, for a while: every model call checks it, and one
 * read of the marker per call was one more round trip to the store per step. Not for ever:
 * a store wiped under a running worker must get its marker back (adopted from the next
 * session's id) before a restarted worker would mark it anew and refuse every session.
 */
const identities = new Map<string, { id: string; until: number }>();
const IDENTITY_TTL_MS = 30_000;

/** Test hook: forget the identities read (the next check reads the marker). */
export function clearIdentityCache(): void {
  identities.clear();
}

/**
 * The store's identity: a random id in its marker object, written by the first worker (or
 * session) that finds none. Sessions record the id of the store they started on; a worker
 * whose store has another id is not that session's store (activities/store/identity.ts).
 * `adopt` names the id to write when there is no marker (a wiped store takes its session's id back).
 */
export async function storeIdentity(target: StoreTarget, adopt?: string): Promise<{ id: string; created: boolean }> {
  const store = resolveTarget(target);
  const key = `${store.kind}\0${store.where}`;
  const known = identities.get(key);
  if (known !== undefined && known.until > Date.now()) return { id: known.id, created: false };
  try {
    const found = await readIdentity(store);
    if (found !== null) {
      identities.set(key, { id: found, until: Date.now() + IDENTITY_TTL_MS });
      return { id: found, created: false };
    }
    const mine = adopt ?? randomUUID();
    await store.putIfAbsent(IDENTITY_KEY, Buffer.from(JSON.stringify({ keel: 'conversation-store', id: mine, createdAt: new Date().toISOString() }), 'utf8'));
    // Two first workers may race: whichever marker landed is the store's id.
    const id = await readIdentity(store);
    if (id === null) throw new Error('the identity marker vanished right after it was written');
    identities.set(key, { id, until: Date.now() + IDENTITY_TTL_MS });
    return { id, created: id === mine };
  } catch (error) {
    throw ioFault('write', store, null, error);
  }
}

async function readIdentity(store: ObjectStore): Promise<string | null> {
  const body = await store.get(IDENTITY_KEY);
  if (body === null) return null;
  const parsed = JSON.parse(body.toString('utf8')) as { id?: unknown };
  if (typeof parsed.id !== 'string' || parsed.id.length === 0) throw new Error(`the identity marker ${IDENTITY_KEY} is not Keel's`);
  return parsed.id;
}

/**
 * Fails unless `target` is the store `expected` names (the id a session recorded): a worker
 * that sees another store refuses the session's activities instead of forking its conversation.
 */
export async function checkStoreIdentity(target: StoreTarget, expected: string | undefined): Promise<void> {
  if (expected === undefined) return;
  const store = resolveTarget(target);
  const { id } = await storeIdentity(store, expected);
  if (id !== expected) {
    throw new ConversationStoreError({
      cause: 'foreign',
      segment: null,
      store,
      detail: `this worker's store is ${id}, but the session's is ${expected}: the worker is not configured with the fleet's store (KEEL_STORE_URL / KEEL_STORE_DIR)`,
    });
  }
}

/** The store as activities: `storeSegment` puts items (messages, tool definitions) and returns their id. */
export function createStoreActivities(env: NodeJS.ProcessEnv = process.env) {
  return {
    async storeSegment(request: { store: string; parent: string | null; items: unknown[]; storeId?: string }): Promise<string | null> {
      const store = storeFor(request.store, env);
      try {
        await checkStoreIdentity(store, request.storeId);
        return await appendSegment(store, request.parent, request.items, await storeKeys(env));
      } catch (error) {
        throw error instanceof ConversationStoreError ? error.failure() : error;
      }
    },
    /** The id of the store a session starts on (it records it, and every later call is checked against it). */
    async storeIdentity(request: { store: string }): Promise<string> {
      try {
        return (await storeIdentity(storeFor(request.store, env))).id;
      } catch (error) {
        throw error instanceof ConversationStoreError ? error.failure() : error;
      }
    },
  };
}
export type StoreActivities = ReturnType<typeof createStoreActivities>;
