// The conversation store: a session's messages as immutable, content-addressed segments
// in a directory the activities share. A segment is `{ parent, messages }` named by the
// SHA-256 of its canonical JSON, so writing one twice (an activity retry, a replayed
// workflow) is harmless, and a conversation is named by its last segment (the head).
// Workflows pass the model activity a head plus the messages added since, never the whole
// conversation: workflow history then grows with each step's new messages only.
//
// The directory is KEEL_STORE_DIR when the worker sets it, else the one the workflow
// names (by default `<workspace>/.keel/store`). Workers on several hosts need a shared
// directory (or, later, an S3-compatible bucket behind the same two functions).
import { createHash } from 'node:crypto';
import { access, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { decryptBytes, encryptBytes, type EncryptionKey, loadEncryptionKeys } from '../worker/encryption';

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
  return Buffer.from(await decryptBytes(keys, String(parsed.key), Buffer.from(String(parsed.data), 'base64'))).toString('utf8');
}

export interface StoredSegment<M = unknown> {
  parent: string | null;
  messages: M[];
}

const HEAD = /^[0-9a-f]{64}$/;

/** Where segments live: the worker's KEEL_STORE_DIR wins over what the caller named. */
export function storeDir(requested: string, env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env.KEEL_STORE_DIR?.trim();
  return path.resolve(fromEnv ? fromEnv : requested);
}

function segmentPath(dir: string, hash: string): string {
  return path.join(dir, 'segments', hash.slice(0, 2), `${hash}.json`);
}

export function segmentHash(segment: StoredSegment): string {
  return createHash('sha256').update(JSON.stringify({ parent: segment.parent, messages: segment.messages })).digest('hex');
}

/**
 * Segments read are cached so a long session reads each from disk once. The key is the
 * store directory AND the hash: the same content (tool definitions are identical for every
 * session) lives once per store, and a segment known in one directory says nothing about
 * another. The cache only ever saves a read; whether a segment is on disk is asked of the
 * disk (a cache keyed by content alone skipped writes to a second store, and a new worker
 * then found "segment … is missing").
 */
const cache = new Map<string, StoredSegment>();
let cacheLimit = 20_000;
const cacheKey = (dir: string, hash: string) => `${dir}\0${hash}`;

function remember(dir: string, hash: string, segment: StoredSegment): void {
  const key = cacheKey(dir, hash);
  cache.delete(key);
  while (cache.size >= cacheLimit) {
    const oldest = cache.keys().next().value;
    if (oldest === undefined) break;
    cache.delete(oldest);
  }
  cache.set(key, segment);
}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}

/** Stores `messages` after `parent` and returns the new head (the parent itself when there is nothing to add). */
export async function appendSegment<M>(dir: string, parent: string | null, messages: readonly M[], keys: StoreKeys = null): Promise<string | null> {
  if (messages.length === 0) return parent;
  const segment: StoredSegment = { parent, messages: [...messages] };
  const hash = segmentHash(segment);
  const file = segmentPath(dir, hash);
  // One stat per append: cheaper than trusting memory, and right after any restart or eviction.
  if (await exists(file)) return hash;
  await mkdir(path.dirname(file), { recursive: true });
  // Write-then-rename: a reader never sees half a segment, and a concurrent writer of the
  // same hash writes the same bytes.
  const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  await writeFile(tmp, await seal(keys, JSON.stringify(segment)));
  await rename(tmp, file);
  remember(dir, hash, segment);
  return hash;
}

async function readSegment(dir: string, hash: string, keys: StoreKeys): Promise<StoredSegment> {
  if (!HEAD.test(hash)) throw new Error(`not a segment id: ${JSON.stringify(hash)}`);
  const cached = cache.get(cacheKey(dir, hash));
  if (cached) {
    // Most recently used last: eviction takes the coldest.
    remember(dir, hash, cached);
    return cached;
  }
  let text: string;
  try {
    text = await readFile(segmentPath(dir, hash), 'utf8');
  } catch (error) {
    throw new Error(`conversation segment ${hash} is missing from ${dir} (${(error as Error).message})`, { cause: error });
  }
  const segment = JSON.parse(await unseal(keys, text, `${hash} in ${dir}`)) as StoredSegment;
  if (segmentHash(segment) !== hash) throw new Error(`conversation segment ${hash} in ${dir} is corrupt (its content does not match its name)`);
  remember(dir, hash, segment);
  return segment;
}

/** Every message of the conversation that ends at `head`, oldest first. */
export async function readConversation<M = unknown>(dir: string, head: string | null, keys: StoreKeys = null): Promise<M[]> {
  const chunks: unknown[][] = [];
  const seen = new Set<string>();
  for (let at = head; at !== null; ) {
    if (seen.has(at)) throw new Error(`conversation segment ${at} loops back on itself`);
    seen.add(at);
    const segment = await readSegment(dir, at, keys);
    chunks.push(segment.messages);
    at = segment.parent;
  }
  return chunks.reverse().flat() as M[];
}

/** Test hook: forget cached segments (so reads hit the disk). */
export function clearSegmentCache(): void {
  cache.clear();
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

/** The store as activities: `storeSegment` puts items (messages, tool definitions) and returns their id. */
export function createStoreActivities(env: NodeJS.ProcessEnv = process.env) {
  return {
    async storeSegment(request: { store: string; parent: string | null; items: unknown[] }): Promise<string | null> {
      return appendSegment(storeDir(request.store, env), request.parent, request.items, await storeKeys(env));
    },
  };
}
export type StoreActivities = ReturnType<typeof createStoreActivities>;
