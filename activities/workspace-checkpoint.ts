// Workspace checkpoints as activities (the rules: machines/checkpoint-manifest.ts,
// machines/checkpoint-budget.ts). `checkpointWorkspace` runs at a turn boundary: it stores
// the conversation's pending messages (so the boundary has one head), walks the workspace
// without following any link, hashes only files whose size, mtime or mode changed since the
// last checkpoint, stores the new contents as blobs and a manifest of what changed.
// `restoreWorkspace` lays a workspace out as a checkpoint had it: a new directory for a fork,
// the session's own for a rewind. Both run as activities on the workspace's host (never local
// activities: a scan of 100,000 files must not hold the workflow task), heartbeating, with
// their file system work on libuv's threads, off the event loop.
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { applyManifest, CHECKPOINT_FORMAT, checkpointIgnores, diffStates, linkStaysInside, manifestDelta, needsHash, parseManifest, type CheckpointManifest, type WorkspaceState } from '../machines/checkpoint-manifest';
import { keepFile, type CheckpointLimits } from '../machines/checkpoint-budget';
import { decryptBytes, encryptBytes } from '../shared/encryption';
import { appendSegment, checkStoreIdentity, readConversation, storeFor, storeKeys, type StoreKeys } from './conversation-store';
import { extendWarm, warmKeyHere } from './llm-input';
import type Anthropic from '@anthropic-ai/sdk';
import { ConversationStoreError } from './store/errors';
import { blobKey, checkpointKey, type ObjectStore } from './store/interface';

export interface CheckpointRequest {
  store: string;
  storeId?: string | undefined;
  workspace: string;
  /** The last checkpoint's manifest (null: this is the first, and keeps everything). */
  previous: string | null;
  /** The conversation as the workflow holds it: stored here, so the boundary has one head. */
  conversation: { head: string | null; append: unknown[] };
  limits: CheckpointLimits;
  /** New content the session's checkpoints hold already (the budget's use). */
  usedBytes: number;
}

export interface CheckpointResult {
  manifest: string;
  head: string | null;
  files: number;
  changed: number;
  removed: number;
  skipped: { path: string; reason: string }[];
  /** New content stored by this checkpoint (counts against the budget). */
  storedBytes: number;
  incomplete: string | null;
}

export interface RestoreRequest {
  store: string;
  storeId?: string | undefined;
  workspace: string;
  manifest: string;
  /** `fresh`: a fork's new directory (made here; a retry finds it half laid out and finishes it). */
  mode: 'fresh' | 'in_place';
  /** With it, the conversation's newest messages come back (a fork's transcript). */
  conversation?: { head: string | null; tailMessages: number } | undefined;
}

export interface RestoreResult {
  written: number;
  removed: number;
  /** Paths the checkpoint did not keep (left as they are in place; absent in a fork), with the reason. */
  skipped: { path: string; reason: string }[];
  tail?: unknown[];
}

const SEALED = Buffer.from('KEELSEAL1\n');

async function sealBytes(keys: StoreKeys, plain: Buffer): Promise<Buffer> {
  if (!keys) return plain;
  const { keyId, data } = await encryptBytes(keys, plain);
  return Buffer.concat([SEALED, Buffer.from(`${keyId}\n`), Buffer.from(data)]);
}

async function unsealBytes(keys: StoreKeys, body: Buffer, what: string): Promise<Buffer> {
  if (!body.subarray(0, SEALED.length).equals(SEALED)) return body;
  if (!keys) throw new Error(`${what} is encrypted, and this worker has no KEEL_ENCRYPTION_KEYS`);
  const rest = body.subarray(SEALED.length);
  const nl = rest.indexOf(10);
  return Buffer.from(await decryptBytes(keys, rest.subarray(0, nl).toString('utf8'), rest.subarray(nl + 1)));
}

const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

function beat(details: unknown): void {
  try {
    Context.current().heartbeat(details);
  } catch {
    // Outside an activity (a bench, a unit test): nothing to beat.
  }
}

/** Full states by manifest id, per store: the next turn's checkpoint compares against the last one without reading the chain again. */
const states = new Map<string, WorkspaceState>();
const STATES_MAX = 64;
function rememberState(store: ObjectStore, id: string, state: WorkspaceState): void {
  const key = `${store.kind}\0${store.where}\0${id}`;
  states.delete(key);
  while (states.size >= STATES_MAX) states.delete(states.keys().next().value!);
  states.set(key, state);
}

async function readManifest(store: ObjectStore, keys: StoreKeys, id: string): Promise<CheckpointManifest> {
  const body = await store.get(checkpointKey(id));
  if (body === null) throw new Error(`checkpoint ${id} is missing from the store ${store.where}`);
  const plain = await unsealBytes(keys, body, `checkpoint ${id}`);
  if (sha256(plain) !== id) throw new Error(`checkpoint ${id} in ${store.where} is corrupt (its content does not match its name)`);
  return parseManifest(JSON.parse(plain.toString('utf8')), id);
}

/** The workspace's state at a checkpoint: its chain read back (cached per process). */
export async function stateOf(store: ObjectStore, keys: StoreKeys, id: string): Promise<WorkspaceState> {
  const cached = states.get(`${store.kind}\0${store.where}\0${id}`);
  if (cached) return cached;
  const chain: CheckpointManifest[] = [];
  const seen = new Set<string>();
  let base: WorkspaceState | null = null;
  for (let at: string | null = id; at !== null; ) {
    if (seen.has(at)) throw new Error(`checkpoint ${id}'s chain loops back on itself at ${at}`);
    seen.add(at);
    const hit = at !== id ? states.get(`${store.kind}\0${store.where}\0${at}`) : undefined;
    if (hit) {
      base = hit;
      break;
    }
    const m = await readManifest(store, keys, at);
    chain.push(m);
    at = m.parent;
  }
  const state: WorkspaceState = { ...(base ?? {}) };
  for (const m of chain.reverse()) applyManifest(state, m);
  rememberState(store, id, state);
  return state;
}

interface Scanned {
  rel: string;
  entry: { kind: 'file'; size: number; mtimeMs: number; mode: number } | { kind: 'link'; target: string };
}

/**
 * Every file and link under `root` (not `.keel/`, `.git/`), never following a link. Stops at
 * `maxFiles` or `maxScanMs` and says why.
 */
async function scan(root: string, limits: Pick<CheckpointLimits, 'maxFiles' | 'maxScanMs'>): Promise<{ found: Scanned[]; incomplete: string | null; skippedLinks: { path: string; reason: string }[] }> {
  const started = Date.now();
  const found: Scanned[] = [];
  const skippedLinks: { path: string; reason: string }[] = [];
  const dirs: string[] = [''];
  let incomplete: string | null = null;
  while (dirs.length > 0 && incomplete === null) {
    const dirRel = dirs.pop()!;
    let entries;
    try {
      entries = await fs.readdir(path.join(root, dirRel), { withFileTypes: true });
    } catch (error) {
      // A directory removed while scanning, or one the worker cannot read: not in the checkpoint.
      if (dirRel === '') throw error;
      continue;
    }
    for (const d of entries) {
      const rel = dirRel === '' ? d.name : `${dirRel}/${d.name}`;
      if (checkpointIgnores(rel)) continue;
      if (d.isDirectory()) dirs.push(rel);
      else if (d.isSymbolicLink()) {
        const target = await fs.readlink(path.join(root, rel)).catch(() => null);
        if (target === null) continue;
        if (linkStaysInside(rel, target)) found.push({ rel, entry: { kind: 'link', target } });
        else skippedLinks.push({ path: rel, reason: `${rel}: a symbolic link to ${target}, outside the workspace: not followed and not kept` });
      } else if (d.isFile()) {
        const st = await fs.lstat(path.join(root, rel)).catch(() => null);
        if (st === null || !st.isFile()) continue;
        found.push({ rel, entry: { kind: 'file', size: st.size, mtimeMs: Math.floor(st.mtimeMs), mode: st.mode & 0o777 } });
      }
      if (found.length >= limits.maxFiles) {
        incomplete = `the workspace has more than ${limits.maxFiles.toLocaleString('en-US')} files (checkpoints.maxFiles): files past them are kept as they were at the last checkpoint`;
        break;
      }
      if (found.length % 2000 === 0) {
        beat({ scanned: found.length });
        if (Date.now() - started > limits.maxScanMs) {
          incomplete = `the scan took longer than ${limits.maxScanMs} ms (checkpoints.maxScanMs): files not reached are kept as they were at the last checkpoint`;
          break;
        }
      }
    }
  }
  return { found, incomplete, skippedLinks };
}

/** A file read without following a link at its last component (a link planted meanwhile is refused, not read). */
async function readNoFollow(file: string): Promise<Buffer> {
  const handle = await fs.open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

export async function checkpointWorkspace(request: CheckpointRequest, env: NodeJS.ProcessEnv = process.env): Promise<CheckpointResult> {
  const store = storeFor(request.store, env);
  const keys = await storeKeys(env);
  await checkStoreIdentity(store, request.storeId);
  const head = await appendSegment(store, request.conversation.head, request.conversation.append, keys);
  // The session's warm conversation on this worker (activities/warm-conversations.ts) moves on with it.
  await extendWarm(warmKeyHere(), store, request.conversation.head, head, request.conversation.append as Anthropic.MessageParam[], keys);
  const before = request.previous === null ? {} : await stateOf(store, keys, request.previous);
  const { found, incomplete, skippedLinks } = await scan(request.workspace, request.limits);
  const after: WorkspaceState = incomplete === null ? {} : { ...before };
  const skipped = [...skippedLinks];
  let storedBytes = 0;
  let hashed = 0;
  for (const { rel, entry } of found) {
    if (entry.kind === 'link') {
      after[rel] = entry;
      continue;
    }
    const was = before[rel];
    // Not kept before and untouched since: still not kept, said once (when it was skipped).
    if (was?.kind === 'skipped' && was.size === entry.size && was.mtimeMs === entry.mtimeMs) {
      after[rel] = was;
      continue;
    }
    if (!needsHash(was, entry)) {
      after[rel] = was!;
      continue;
    }
    if (entry.size > request.limits.maxFileBytes) {
      const decision = keepFile(rel, entry.size, request.limits, request.usedBytes + storedBytes, false);
      const reason = decision.keep ? '' : decision.reason;
      after[rel] = { kind: 'skipped', reason, size: entry.size, mtimeMs: entry.mtimeMs };
      skipped.push({ path: rel, reason });
      continue;
    }
    let content: Buffer;
    try {
      content = await readNoFollow(path.join(request.workspace, rel));
    } catch {
      continue; // gone (or replaced by a link) since the scan: as if never seen
    }
    const hash = sha256(content);
    if (++hashed % 200 === 0) beat({ hashed });
    const stored = await store.has(blobKey(hash));
    const decision = keepFile(rel, content.length, request.limits, request.usedBytes + storedBytes, stored);
    if (!decision.keep) {
      after[rel] = { kind: 'skipped', reason: decision.reason, size: content.length, mtimeMs: entry.mtimeMs };
      skipped.push({ path: rel, reason: decision.reason });
      continue;
    }
    if (!stored) {
      await store.putIfAbsent(blobKey(hash), await sealBytes(keys, content));
      storedBytes += content.length;
    }
    after[rel] = { kind: 'file', hash, size: content.length, mode: entry.mode, mtimeMs: entry.mtimeMs };
  }
  const delta = manifestDelta(before, after, incomplete === null);
  let manifest = request.previous;
  if (manifest === null || Object.keys(delta.set).length > 0 || delta.removed.length > 0) {
    const m: CheckpointManifest = { format: CHECKPOINT_FORMAT, parent: request.previous, set: delta.set, removed: delta.removed, incomplete };
    const plain = Buffer.from(JSON.stringify(m), 'utf8');
    manifest = sha256(plain);
    await store.putIfAbsent(checkpointKey(manifest), await sealBytes(keys, plain));
    storedBytes += plain.length;
  }
  rememberState(store, manifest, after);
  return {
    manifest,
    head,
    files: Object.keys(after).length,
    changed: Object.keys(delta.set).length,
    removed: delta.removed.length,
    skipped: skipped.slice(0, 50),
    storedBytes,
    incomplete,
  };
}

/**
 * Makes `rel`'s parent directories real directories inside the workspace: a link or a file
 * where a directory must be is removed first (never followed), so nothing lands outside.
 */
async function ensureParents(root: string, rel: string): Promise<void> {
  const parts = rel.split('/').slice(0, -1);
  let at = root;
  for (const part of parts) {
    at = path.join(at, part);
    const st = await fs.lstat(at).catch(() => null);
    if (st?.isDirectory()) continue;
    if (st !== null) await fs.rm(at, { force: true });
    await fs.mkdir(at);
  }
}

/** Writes a file by a temporary name and a rename: the rename replaces a link at the name instead of writing through it. */
async function writeFileAt(root: string, rel: string, content: Buffer, mode: number): Promise<void> {
  await ensureParents(root, rel);
  const file = path.join(root, rel);
  const st = await fs.lstat(file).catch(() => null);
  if (st?.isDirectory()) await fs.rm(file, { recursive: true, force: true });
  const tmp = path.join(path.dirname(file), `.keel-restore-${process.pid}-${Math.random().toString(36).slice(2)}`);
  await fs.writeFile(tmp, content, { mode, flag: 'wx' });
  await fs.chmod(tmp, mode);
  await fs.rename(tmp, file);
}

async function removeAt(root: string, rel: string): Promise<void> {
  // Only when every parent is a real directory: a link in the way points elsewhere.
  const parts = rel.split('/');
  let at = root;
  for (const part of parts.slice(0, -1)) {
    at = path.join(at, part);
    const st = await fs.lstat(at).catch(() => null);
    if (!st?.isDirectory()) return;
  }
  await fs.rm(path.join(root, rel), { force: true });
  // Directories the removal left empty go too (checkpoints record files, not directories).
  for (let dir = path.dirname(rel); dir !== '.' && dir !== ''; dir = path.dirname(dir)) {
    if (checkpointIgnores(dir)) break;
    const removed = await fs.rmdir(path.join(root, dir)).then(() => true, () => false);
    if (!removed) break;
  }
}

const FORK_MARK = path.join('.keel', 'fork.json');

/**
 * A fork's workspace must be new: an existing directory with files in it is refused (a fork
 * lays its directory out, removing what the checkpoint does not have), unless it is this
 * fork's own, half laid out by an attempt that failed (its mark, in .keel/, says so).
 */
async function claimFresh(workspace: string, manifest: string): Promise<void> {
  const entries = await fs.readdir(workspace).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return null;
    throw error;
  });
  if (entries !== null && entries.length > 0) {
    const mark = await fs.readFile(path.join(workspace, FORK_MARK), 'utf8').catch(() => null);
    if (mark === null) throw ApplicationFailure.nonRetryable(`the fork's workspace ${workspace} already exists and is not empty: name a new directory`, 'workspace_not_empty');
    return;
  }
  await fs.mkdir(path.join(workspace, '.keel'), { recursive: true });
  await fs.writeFile(path.join(workspace, FORK_MARK), `${JSON.stringify({ manifest, at: new Date().toISOString() })}\n`);
}

export async function restoreWorkspace(request: RestoreRequest, env: NodeJS.ProcessEnv = process.env): Promise<RestoreResult> {
  const store = storeFor(request.store, env);
  const keys = await storeKeys(env);
  await checkStoreIdentity(store, request.storeId);
  const target = await stateOf(store, keys, request.manifest);
  if (request.mode === 'fresh') await claimFresh(request.workspace, request.manifest);
  else if (!(await fs.stat(request.workspace).then((s) => s.isDirectory(), () => false))) {
    throw ApplicationFailure.nonRetryable(`the workspace ${request.workspace} is gone: nothing to rewind`, 'workspace_gone');
  }
  const { found } = await scan(request.workspace, { maxFiles: Number.MAX_SAFE_INTEGER, maxScanMs: Number.MAX_SAFE_INTEGER });
  const current = new Map(found.map((f) => [f.rel, f.entry] as const));
  const skipped: { path: string; reason: string }[] = [];
  let written = 0;
  let removed = 0;
  for (const [rel, entry] of Object.entries(target)) {
    if (checkpointIgnores(rel)) continue; // a damaged or foreign manifest must not write Keel's or git's state
    const now = current.get(rel);
    switch (entry.kind) {
      case 'skipped':
        skipped.push({ path: rel, reason: entry.reason });
        break;
      case 'link': {
        if (now?.kind === 'link' && now.target === entry.target) break;
        if (!linkStaysInside(rel, entry.target)) break;
        await ensureParents(request.workspace, rel);
        await fs.rm(path.join(request.workspace, rel), { recursive: true, force: true });
        await fs.symlink(entry.target, path.join(request.workspace, rel));
        written++;
        break;
      }
      case 'file': {
        if (now?.kind === 'file' && now.size === entry.size && (now.mode & 0o777) === (entry.mode & 0o777)) {
          const same = await readNoFollow(path.join(request.workspace, rel)).then((b) => sha256(b) === entry.hash, () => false);
          if (same) break;
        }
        const body = await store.get(blobKey(entry.hash));
        if (body === null) {
          skipped.push({ path: rel, reason: `${rel}: its content (${entry.hash.slice(0, 12)}…) is missing from the store ${store.where}` });
          break;
        }
        const content = await unsealBytes(keys, body, `the content of ${rel}`);
        if (sha256(content) !== entry.hash) throw new Error(`the stored content of ${rel} (${entry.hash}) is corrupt`);
        await writeFileAt(request.workspace, rel, content, entry.mode & 0o777);
        written++;
        if (written % 200 === 0) beat({ written });
        break;
      }
      default: {
        const never: never = entry;
        throw new Error(`unknown checkpoint entry ${JSON.stringify(never)}`);
      }
    }
  }
  for (const rel of current.keys()) {
    if (target[rel] !== undefined) continue;
    await removeAt(request.workspace, rel);
    removed++;
  }
  const tail = request.conversation ? (await readConversation(store, request.conversation.head, keys)).slice(-request.conversation.tailMessages) : undefined;
  return { written, removed, skipped: skipped.slice(0, 50), ...(tail !== undefined ? { tail } : {}) };
}

/** Files added, removed and changed between two checkpoints (the CLI's and the console's diff). */
export async function diffCheckpoints(request: { store: string; storeId?: string; from: string; to: string }, env: NodeJS.ProcessEnv = process.env): Promise<{ added: string[]; removed: string[]; changed: string[] }> {
  const store = storeFor(request.store, env);
  const keys = await storeKeys(env);
  await checkStoreIdentity(store, request.storeId);
  return diffStates(await stateOf(store, keys, request.from), await stateOf(store, keys, request.to));
}

/** The activities a worker registers; store errors become the store's failures (retried as the store's are). */
export function createCheckpointActivities(env: NodeJS.ProcessEnv = process.env) {
  const wrap =
    <I, O>(fn: (input: I, env: NodeJS.ProcessEnv) => Promise<O>) =>
    async (input: I): Promise<O> => {
      try {
        return await fn(input, env);
      } catch (error) {
        throw error instanceof ConversationStoreError ? error.failure() : error;
      }
    };
  return { checkpointWorkspace: wrap(checkpointWorkspace), restoreWorkspace: wrap(restoreWorkspace), diffCheckpoints: wrap(diffCheckpoints) };
}
export type CheckpointActivities = ReturnType<typeof createCheckpointActivities>;
