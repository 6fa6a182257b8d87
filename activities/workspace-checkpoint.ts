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
import fs from 'node:fs/promises';
import path from 'node:path';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { applyManifest, checkpointIgnores, diffStates, formatFor, linkStaysInside, manifestDelta, needsHash, parseManifest, racy, type CheckpointEntry, type CheckpointManifest, type FileStat, type PackRef, type WorkspaceState } from '../machines/checkpoint-manifest';
import { keepFile, type CheckpointLimits } from '../machines/checkpoint-budget';
import { decryptBytes, encryptBytes } from '../shared/encryption';
import { appendSegment, checkStoreIdentity, readConversation, storeFor, storeKeys, type StoreKeys } from './conversation-store';
import { extendWarm, warmKeyHere } from './llm-input';
import type Anthropic from '@anthropic-ai/sdk';
import { ConversationStoreError } from './store/errors';
import { blobKey, checkpointKey, packKey, type ObjectStore } from './store/interface';
import { scanWorkspace, Slices, statOf } from './workspace-scan';
import { PinnedTree } from './workspace-tree';

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
  /** Files read and hashed by this attempt (the rest were known unchanged by their stat). */
  read: number;
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

/**
 * What the last checkpoint of each workspace saw of its files (inode, ctime…): a directory
 * whose files still stat the same is not read again. Per process; a worker that did not
 * take the last checkpoint falls back to the manifest's size, mtime and mode.
 */
const statCaches = new Map<string, { manifest: string; stats: Map<string, FileStat> }>();
const STAT_CACHES_MAX = 64;
function rememberStats(workspace: string, manifest: string, stats: Map<string, FileStat>): void {
  statCaches.delete(workspace);
  while (statCaches.size >= STAT_CACHES_MAX) statCaches.delete(statCaches.keys().next().value!);
  statCaches.set(workspace, { manifest, stats });
}
/** A stat that cannot match a later one: the file is read at the next checkpoint (racy, see `racy`). */
const UNKNOWN_STAT: FileStat = { size: -1, mtimeMs: -1, mode: -1, ino: -1, ctimeMs: -1 };

/** Files up to this size go into packs; a pack is written once it holds PACK_BYTES. */
export const PACK_FILE_MAX = 64 * 1024;
const PACK_BYTES = 8 * 1024 * 1024;

/** Small files' contents gathered into one object; entries learn the pack's id when it is written. */
class Packer {
  private parts: Buffer[] = [];
  private size = 0;
  private waiting: { ref: PackRef }[] = [];
  constructor(
    private readonly store: ObjectStore,
    private readonly keys: StoreKeys,
  ) {}

  add(content: Buffer, holder: { ref: PackRef }): void {
    holder.ref.offset = this.size;
    this.parts.push(content);
    this.size += content.length;
    this.waiting.push(holder);
  }

  get full(): boolean {
    return this.size >= PACK_BYTES;
  }

  /** Writes the pack; returns its bytes (0 when empty). */
  async flush(): Promise<number> {
    if (this.waiting.length === 0) return 0;
    const plain = Buffer.concat(this.parts, this.size);
    const id = sha256(plain);
    await this.store.putIfAbsent(packKey(id), await sealBytes(this.keys, plain));
    for (const w of this.waiting) w.ref.id = id;
    const bytes = this.size;
    this.parts = [];
    this.size = 0;
    this.waiting = [];
    return bytes;
  }
}

/** Heartbeat details of a checkpoint: a retry goes on from the partial manifest instead of reading every file again. */
interface CheckpointProgress {
  partial: string | null;
  scanned: number;
  hashed: number;
}

function progressOf(): CheckpointProgress | null {
  try {
    const details = Context.current().info.heartbeatDetails as Partial<CheckpointProgress> | undefined;
    return typeof details?.partial === 'string' ? { partial: details.partial, scanned: details.scanned ?? 0, hashed: details.hashed ?? 0 } : null;
  } catch {
    return null;
  }
}

async function writeManifest(store: ObjectStore, keys: StoreKeys, m: CheckpointManifest): Promise<{ id: string; bytes: number }> {
  const plain = Buffer.from(JSON.stringify(m), 'utf8');
  const id = sha256(plain);
  await store.putIfAbsent(checkpointKey(id), await sealBytes(keys, plain));
  return { id, bytes: plain.length };
}

/** Progress is saved (a partial manifest, named in the heartbeat) after this many bytes or files read (a test lowers them). */
export const CHECKPOINT_PROGRESS = { everyBytes: 32 * 1024 * 1024, everyFiles: 20_000 };

export async function checkpointWorkspace(request: CheckpointRequest, env: NodeJS.ProcessEnv = process.env): Promise<CheckpointResult> {
  const store = storeFor(request.store, env);
  const keys = await storeKeys(env);
  await checkStoreIdentity(store, request.storeId);
  const head = await appendSegment(store, request.conversation.head, request.conversation.append, keys);
  // The session's warm conversation on this worker (activities/warm-conversations.ts) moves on with it.
  await extendWarm(warmKeyHere(), store, request.conversation.head, head, request.conversation.append as Anthropic.MessageParam[], keys);
  const before = request.previous === null ? {} : await stateOf(store, keys, request.previous);
  const cached = statCaches.get(request.workspace);
  const known = cached !== undefined && cached.manifest === request.previous ? cached.stats : null;
  // A retry of a checkpoint cut short: what the last attempt read and stored is not read again.
  const progress: CheckpointProgress = progressOf() ?? { partial: null, scanned: 0, hashed: 0 };
  const resumed = progress.partial === null ? null : await stateOf(store, keys, progress.partial).catch(() => null);
  if (resumed === null) progress.partial = null;
  const slices = new Slices(() => beat(progress));
  const tree = new PinnedTree(request.workspace);
  try {
    return await checkpointTree(request, tree, { store, keys, head, before, known, progress, resumed, slices });
  } finally {
    tree.close();
  }
}

async function checkpointTree(
  request: CheckpointRequest,
  tree: PinnedTree,
  { store, keys, head, before, known, progress, resumed, slices }: { store: ObjectStore; keys: StoreKeys; head: CheckpointResult['head']; before: WorkspaceState; known: Map<string, FileStat> | null; progress: CheckpointProgress; resumed: WorkspaceState | null; slices: Slices },
): Promise<CheckpointResult> {
  let read = 0;
  const { found, incomplete, skippedLinks } = await scanWorkspace(tree, request.limits, slices);
  progress.scanned = found.length;
  const after: WorkspaceState = incomplete === null ? {} : { ...before };
  const stats = new Map<string, FileStat>();
  const skipped = [...skippedLinks];
  const packer = new Packer(store, keys);
  // Contents already stored, by hash: a file copied, renamed or changed back costs nothing.
  const byHash = new Map<string, CheckpointEntry & { kind: 'file' }>();
  let byHashFilled = false;
  const storedAt = (hash: string) => {
    if (!byHashFilled) {
      byHashFilled = true;
      for (const e of Object.values(before)) if (e.kind === 'file') byHash.set(e.hash, e);
      if (resumed) for (const e of Object.values(resumed)) if (e.kind === 'file') byHash.set(e.hash, e);
    }
    return byHash.get(hash);
  };
  let storedBytes = 0;
  let sinceSaved = { bytes: 0, files: 0, set: {} as WorkspaceState };
  const save = async () => {
    // The partial manifest is a manifest like any other (chained on the last partial), marked incomplete.
    storedBytes += await packer.flush();
    const m: CheckpointManifest = { format: formatFor(sinceSaved.set), parent: progress.partial ?? request.previous, set: sinceSaved.set, removed: [], incomplete: 'partial: a checkpoint still being taken' };
    const written = await writeManifest(store, keys, m);
    const state = progress.partial === null ? { ...before } : { ...(await stateOf(store, keys, progress.partial)) };
    applyManifest(state, m);
    rememberState(store, written.id, state);
    progress.partial = written.id;
    sinceSaved = { bytes: 0, files: 0, set: {} };
    beat(progress);
  };
  for (const { rel, entry } of found) {
    await slices.tick();
    if (entry.kind === 'link') {
      after[rel] = entry;
      continue;
    }
    const now = entry.stat;
    const was = before[rel];
    // Not kept before and untouched since: still not kept, said once (when it was skipped).
    if (was?.kind === 'skipped' && was.size === now.size && was.mtimeMs === now.mtimeMs) {
      after[rel] = was;
      continue;
    }
    if (!needsHash(was, now, known?.get(rel) ?? (known === null ? undefined : UNKNOWN_STAT))) {
      after[rel] = was!;
      stats.set(rel, racy(now, Date.now()) ? UNKNOWN_STAT : now);
      continue;
    }
    const done = resumed?.[rel];
    if (done?.kind === 'file' && !needsHash(done, now)) {
      after[rel] = done;
      stats.set(rel, racy(now, Date.now()) ? UNKNOWN_STAT : now);
      continue;
    }
    if (now.size > request.limits.maxFileBytes) {
      const decision = keepFile(rel, now.size, request.limits, request.usedBytes + storedBytes, false);
      const reason = decision.keep ? '' : decision.reason;
      after[rel] = { kind: 'skipped', reason, size: now.size, mtimeMs: now.mtimeMs };
      skipped.push({ path: rel, reason });
      continue;
    }
    const got = tree.read(rel);
    if (got === null) continue; // gone (or replaced by a link) since the scan: as if never seen
    const { content } = got;
    const stat = statOf(got.stats);
    const readAt = Date.now();
    const hash = sha256(content);
    progress.hashed++;
    read++;
    const same = storedAt(hash);
    let stored = same !== undefined;
    if (!stored && content.length > PACK_FILE_MAX) stored = await store.has(blobKey(hash));
    const decision = keepFile(rel, content.length, request.limits, request.usedBytes + storedBytes, stored);
    if (!decision.keep) {
      after[rel] = { kind: 'skipped', reason: decision.reason, size: content.length, mtimeMs: stat.mtimeMs };
      skipped.push({ path: rel, reason: decision.reason });
      continue;
    }
    const file: CheckpointEntry & { kind: 'file' } = { kind: 'file', hash, size: content.length, mode: stat.mode, mtimeMs: stat.mtimeMs };
    if (same?.pack !== undefined) file.pack = same.pack;
    else if (!stored && content.length <= PACK_FILE_MAX) {
      const holder = { ref: { id: '', offset: 0 } };
      file.pack = holder.ref;
      packer.add(content, holder);
      if (packer.full) storedBytes += await packer.flush();
    } else if (!stored) {
      await store.putIfAbsent(blobKey(hash), await sealBytes(keys, content));
      storedBytes += content.length;
    }
    byHash.set(hash, file);
    after[rel] = file;
    stats.set(rel, racy(stat, readAt) ? UNKNOWN_STAT : stat);
    sinceSaved.set[rel] = file;
    sinceSaved.bytes += content.length;
    sinceSaved.files++;
    if (sinceSaved.bytes >= CHECKPOINT_PROGRESS.everyBytes || sinceSaved.files >= CHECKPOINT_PROGRESS.everyFiles) await save();
  }
  storedBytes += await packer.flush();
  const delta = manifestDelta(before, after, incomplete === null);
  let manifest = request.previous;
  if (manifest === null || Object.keys(delta.set).length > 0 || delta.removed.length > 0) {
    const written = await writeManifest(store, keys, { format: formatFor(delta.set), parent: request.previous, set: delta.set, removed: delta.removed, incomplete });
    manifest = written.id;
    storedBytes += written.bytes;
  }
  rememberState(store, manifest, after);
  rememberStats(request.workspace, manifest, stats);
  return {
    manifest,
    head,
    files: Object.keys(after).length,
    changed: Object.keys(delta.set).length,
    removed: delta.removed.length,
    skipped: skipped.slice(0, 50),
    storedBytes,
    incomplete,
    read,
  };
}

/**
 * Lays files out in a workspace with synchronous calls (activities/workspace-scan.ts says
 * why), through the tree's descriptors (activities/workspace-tree.ts), knowing which
 * directories it already made real. A link or a file where a directory must be is removed
 * first (never followed), so nothing lands outside the workspace; a directory swapped for a
 * link meanwhile fails the call (the activity's retry starts again), it is never followed.
 */
class Layout {
  private readonly real = new Set<string>(['']);
  constructor(private readonly tree: PinnedTree) {}

  private ensureParents(rel: string): void {
    const parts = rel.split('/').slice(0, -1);
    let at = '';
    for (const part of parts) {
      at = at === '' ? part : `${at}/${part}`;
      if (this.real.has(at)) continue;
      const st = this.tree.lstat(at);
      if (st !== undefined && !st.isDirectory()) this.tree.unlink(at);
      if (st === undefined || !st.isDirectory()) this.tree.mkdir(at);
      this.real.add(at);
    }
  }

  /** Writes by a temporary name and a rename: the rename replaces a link at the name instead of writing through it. */
  writeFile(rel: string, content: Buffer, mode: number): FileStat {
    this.ensureParents(rel);
    if (this.tree.lstat(rel)?.isDirectory()) this.tree.remove(rel);
    return statOf(this.tree.replaceFile(rel, content, mode, `.keel-restore-${process.pid}-${Math.random().toString(36).slice(2)}`));
  }

  symlink(rel: string, target: string): void {
    this.ensureParents(rel);
    this.tree.remove(rel);
    this.tree.symlink(target, rel);
  }

  remove(rel: string): void {
    // Only when every parent is a real directory now: a link in the way points elsewhere.
    try {
      this.tree.unlink(rel);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOTDIR' || code === 'ELOOP' || code === 'ENOENT' || code === 'EISDIR') return;
      throw error;
    }
    // Directories the removal left empty go too (checkpoints record files, not directories).
    for (let dir = path.dirname(rel); dir !== '.' && dir !== ''; dir = path.dirname(dir)) {
      if (checkpointIgnores(dir)) break;
      try {
        this.tree.rmdir(dir);
        this.real.delete(dir);
      } catch {
        break;
      }
    }
  }
}

/** Contents by entry: a pack is read once per restore, a blob when asked. */
class Contents {
  private readonly packs = new Map<string, Buffer>();
  constructor(
    private readonly store: ObjectStore,
    private readonly keys: StoreKeys,
  ) {}

  async of(rel: string, entry: CheckpointEntry & { kind: 'file' }): Promise<Buffer | null> {
    let content: Buffer;
    if (entry.pack !== undefined) {
      let pack = this.packs.get(entry.pack.id);
      if (pack === undefined) {
        const body = await this.store.get(packKey(entry.pack.id));
        if (body === null) return null;
        pack = await unsealBytes(this.keys, body, `a pack of checkpoint contents (${entry.pack.id.slice(0, 12)}…)`);
        if (sha256(pack) !== entry.pack.id) throw new Error(`the stored pack ${entry.pack.id} is corrupt`);
        this.packs.set(entry.pack.id, pack);
      }
      content = pack.subarray(entry.pack.offset, entry.pack.offset + entry.size);
    } else {
      const body = await this.store.get(blobKey(entry.hash));
      if (body === null) return null;
      content = await unsealBytes(this.keys, body, `the content of ${rel}`);
    }
    if (sha256(content) !== entry.hash) throw new Error(`the stored content of ${rel} (${entry.hash}) is corrupt`);
    return content;
  }
}

const FORK_MARK = '.keel/fork.json';

/**
 * A fork's workspace must be new: an existing directory with files in it is refused (a fork
 * lays its directory out, removing what the checkpoint does not have), unless it is this
 * fork's own, half laid out by an attempt that failed (its mark, in .keel/, says so). Made
 * under its parent's descriptor and then held by its own (activities/workspace-tree.ts):
 * the mark is never written through a link put in the directory's place.
 */
async function claimFresh(workspace: string, manifest: string): Promise<PinnedTree> {
  const parent = path.dirname(workspace);
  await fs.mkdir(parent, { recursive: true });
  const above = new PinnedTree(parent);
  try {
    above.mkdir(path.basename(workspace));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    above.close();
  }
  const tree = new PinnedTree(workspace);
  try {
    if (tree.entries('').length > 0) {
      if (tree.read(FORK_MARK) === null) throw ApplicationFailure.nonRetryable(`the fork's workspace ${workspace} already exists and is not empty: name a new directory`, 'workspace_not_empty');
      return tree;
    }
    tree.mkdir('.keel');
    tree.replaceFile(FORK_MARK, Buffer.from(`${JSON.stringify({ manifest, at: new Date().toISOString() })}\n`), 0o644, `.keel-fork-${process.pid}-${Math.random().toString(36).slice(2)}`);
    return tree;
  } catch (error) {
    tree.close();
    throw error;
  }
}

export async function restoreWorkspace(request: RestoreRequest, env: NodeJS.ProcessEnv = process.env): Promise<RestoreResult> {
  const store = storeFor(request.store, env);
  const keys = await storeKeys(env);
  await checkStoreIdentity(store, request.storeId);
  const target = await stateOf(store, keys, request.manifest);
  if (request.mode === 'in_place' && !(await fs.stat(request.workspace).then((s) => s.isDirectory(), () => false))) {
    throw ApplicationFailure.nonRetryable(`the workspace ${request.workspace} is gone: nothing to rewind`, 'workspace_gone');
  }
  let progress = 0;
  const slices = new Slices(() => beat({ written: progress }));
  const tree = request.mode === 'fresh' ? await claimFresh(request.workspace, request.manifest) : new PinnedTree(request.workspace);
  try {
    return await restoreTree(request, tree, target, store, keys, slices, (n) => (progress = n));
  } finally {
    tree.close();
  }
}

async function restoreTree(request: RestoreRequest, tree: PinnedTree, target: WorkspaceState, store: ObjectStore, keys: StoreKeys, slices: Slices, onWritten: (written: number) => void): Promise<RestoreResult> {
  const { found } = await scanWorkspace(tree, { maxFiles: Number.MAX_SAFE_INTEGER, maxScanMs: Number.MAX_SAFE_INTEGER }, slices);
  const current = new Map(found.map((f) => [f.rel, f.entry] as const));
  const layout = new Layout(tree);
  const contents = new Contents(store, keys);
  // What this restore leaves is known file by file: the next checkpoint of this directory reads none of it again.
  // A fork's new directory is no one else's yet: what was just written there is not racy.
  const trusted = (stat: FileStat) => (request.mode === 'fresh' || !racy(stat, Date.now()) ? stat : UNKNOWN_STAT);
  const stats = new Map<string, FileStat>();
  const skipped: { path: string; reason: string }[] = [];
  let written = 0;
  let removed = 0;
  for (const [rel, entry] of Object.entries(target)) {
    await slices.tick();
    if (checkpointIgnores(rel)) continue; // a damaged or foreign manifest must not write Keel's or git's state
    const now = current.get(rel);
    switch (entry.kind) {
      case 'skipped':
        skipped.push({ path: rel, reason: entry.reason });
        break;
      case 'link': {
        if (now?.kind === 'link' && now.target === entry.target) break;
        if (!linkStaysInside(rel, entry.target)) break;
        layout.symlink(rel, entry.target);
        written++;
        break;
      }
      case 'file': {
        if (now?.kind === 'file' && now.stat.size === entry.size && now.stat.mode === (entry.mode & 0o777)) {
          const read = tree.read(rel);
          if (read !== null && sha256(read.content) === entry.hash) {
            stats.set(rel, trusted(statOf(read.stats)));
            break;
          }
        }
        const content = await contents.of(rel, entry);
        if (content === null) {
          skipped.push({ path: rel, reason: `${rel}: its content (${entry.hash.slice(0, 12)}…) is missing from the store ${store.where}` });
          break;
        }
        const stat = layout.writeFile(rel, content, entry.mode & 0o777);
        stats.set(rel, trusted(stat));
        onWritten(++written);
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
    await slices.tick();
    layout.remove(rel);
    removed++;
  }
  rememberStats(request.workspace, request.manifest, stats);
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
