// A workspace checkpoint: what the workspace's files were at a turn boundary, as a chain of
// manifests in the conversation store. Each manifest holds only what changed since its
// parent (files set, paths removed), the files themselves are content-addressed blobs, so a
// turn that touched one file stores one blob and a manifest of one entry. Pure rules on
// workspace-relative posix paths: which paths a checkpoint keeps, the delta between two
// states, applying a chain, the diff shown between two turns. The activity
// (activities/workspace-checkpoint.ts) does the reading, hashing and writing.
import { protectedDirOf } from './protected-paths';

/**
 * The manifest format: a reader refuses a manifest of a format it does not know, by name.
 * 1: every file's content is a blob of its own. 2: small files' contents may sit in a pack
 * (one object holding many contents end to end: a first checkpoint of 100,000 small files
 * writes a few objects, not 100,000). A manifest is written as 1 when none of its entries
 * names a pack, so a worker that reads only 1 still reads it.
 */
export const CHECKPOINT_FORMAT = 2;
export const CHECKPOINT_FORMATS_READ = [1, 2] as const;
export type CheckpointFormat = (typeof CHECKPOINT_FORMATS_READ)[number];

/** Where a packed content is: the pack's id (the SHA-256 of its plain bytes) and its offset there. */
export interface PackRef {
  id: string;
  offset: number;
}

/** One path's state at a checkpoint. `skipped`: the file exists but was not kept (too big, over budget). */
export type CheckpointEntry =
  | { kind: 'file'; hash: string; size: number; mode: number; mtimeMs: number; pack?: PackRef }
  | { kind: 'link'; target: string }
  | { kind: 'skipped'; reason: string; size: number; mtimeMs: number };

/** A workspace's state: every kept path → its entry. */
export type WorkspaceState = Record<string, CheckpointEntry>;

export interface CheckpointManifest {
  format: CheckpointFormat;
  /** The manifest this one changes (null: the first, whole). */
  parent: string | null;
  set: WorkspaceState;
  removed: string[];
  /** The scan stopped early (too many files, too long): paths not seen are kept as they were. */
  incomplete: string | null;
}

/** Paths a checkpoint never records nor restores over: Keel's and git's own state (machines/protected-paths.ts). */
export function checkpointIgnores(rel: string): boolean {
  return protectedDirOf(rel) !== undefined;
}

/** A manifest from the store, checked: the format first, so a newer one says what it is. */
export function parseManifest(value: unknown, id: string): CheckpointManifest {
  const m = value as Partial<CheckpointManifest> | null;
  if (m === null || typeof m !== 'object') throw new Error(`checkpoint ${id} is not a manifest`);
  if (!(CHECKPOINT_FORMATS_READ as readonly unknown[]).includes(m.format)) {
    throw new Error(`checkpoint ${id} has format ${JSON.stringify(m.format)}; this worker reads formats ${CHECKPOINT_FORMATS_READ.join(' and ')} (a newer Keel wrote it?)`);
  }
  if (typeof m.set !== 'object' || m.set === null || !Array.isArray(m.removed) || (m.parent !== null && typeof m.parent !== 'string')) throw new Error(`checkpoint ${id} is damaged (missing fields)`);
  if (m.format === 1 && Object.values(m.set).some((e) => (e as { pack?: unknown }).pack !== undefined)) throw new Error(`checkpoint ${id} is damaged (format 1 names a pack)`);
  return { format: m.format as CheckpointFormat, parent: m.parent ?? null, set: m.set, removed: m.removed, incomplete: typeof m.incomplete === 'string' ? m.incomplete : null };
}

/** The format a manifest is written in: the oldest that can say what it holds. */
export function formatFor(set: WorkspaceState): CheckpointFormat {
  return Object.values(set).some((e) => e.kind === 'file' && e.pack !== undefined) ? 2 : 1;
}

/** The state a chain of manifests describes, oldest first. */
export function applyChain(manifests: readonly CheckpointManifest[]): WorkspaceState {
  const state: WorkspaceState = {};
  for (const m of manifests) applyManifest(state, m);
  return state;
}

export function applyManifest(state: WorkspaceState, m: CheckpointManifest): void {
  for (const p of m.removed) delete state[p];
  for (const [p, e] of Object.entries(m.set)) state[p] = e;
}

const sameEntry = (a: CheckpointEntry, b: CheckpointEntry): boolean => {
  if (a.kind !== b.kind) return false;
  switch (a.kind) {
    case 'file':
      return b.kind === 'file' && a.hash === b.hash && a.mode === b.mode && a.size === b.size && a.mtimeMs === b.mtimeMs;
    case 'link':
      return b.kind === 'link' && a.target === b.target;
    case 'skipped':
      return b.kind === 'skipped' && a.size === b.size && a.mtimeMs === b.mtimeMs && a.reason === b.reason;
    default: {
      const never: never = a;
      throw new Error(`unknown entry ${JSON.stringify(never)}`);
    }
  }
};

/**
 * What changed from `before` to `after`. With `complete: false` (the scan stopped early) a
 * path not seen is not a removal: nothing is removed.
 */
export function manifestDelta(before: WorkspaceState, after: WorkspaceState, complete = true): { set: WorkspaceState; removed: string[] } {
  const set: WorkspaceState = {};
  for (const [p, e] of Object.entries(after)) {
    const was = before[p];
    if (was === undefined || !sameEntry(was, e)) set[p] = e;
  }
  const removed = complete ? Object.keys(before).filter((p) => after[p] === undefined).sort() : [];
  return { set, removed };
}

/** What a scan sees of a file (lstat, never following a link). */
export interface FileStat {
  size: number;
  mtimeMs: number;
  mode: number;
  ino: number;
  ctimeMs: number;
}

/**
 * Whether a file scanned now must be read and hashed. With `known` (what the last checkpoint
 * of this same directory saw: its stat cache) the file is unchanged only if size, mtime,
 * mode, inode and ctime are all the same — ctime cannot be set back by a program, and a file
 * replaced by a rename has another inode. Without it (a worker that did not take the last
 * checkpoint), the manifest's size, mtime and mode decide. The cache alone says a file is
 * unchanged when the manifest's mtime is not its own: what a restore wrote.
 */
export function needsHash(before: CheckpointEntry | undefined, now: FileStat | Pick<FileStat, 'size' | 'mtimeMs' | 'mode'>, known?: FileStat): boolean {
  if (before?.kind !== 'file' || before.size !== now.size || before.mode !== now.mode) return true;
  // The stat cache decides alone when there is one: a fork's restored files have new mtimes, and are known.
  if (known !== undefined && 'ino' in now) return known.size !== now.size || known.mtimeMs !== now.mtimeMs || known.mode !== now.mode || known.ino !== now.ino || known.ctimeMs !== now.ctimeMs;
  return before.mtimeMs !== now.mtimeMs;
}

/**
 * Linux stamps files with a coarse clock (a tick, up to 10 ms): a file changed again within
 * the tick it was read in keeps its mtime and ctime (git's "racy clean" case). A file whose
 * ctime is this close to the moment it was read is remembered as unknown, so the next
 * checkpoint reads it again instead of trusting its stat.
 */
export const RACY_MS = 25;
export function racy(stat: Pick<FileStat, 'mtimeMs' | 'ctimeMs'>, readAtMs: number): boolean {
  return Math.max(stat.mtimeMs, stat.ctimeMs) + RACY_MS >= readAtMs;
}

/** Files whose content differs between two states (the console's and the CLI's diff between turns). */
export interface CheckpointDiff {
  added: string[];
  removed: string[];
  changed: string[];
}

export function diffStates(a: WorkspaceState, b: WorkspaceState): CheckpointDiff {
  const content = (e: CheckpointEntry) => (e.kind === 'file' ? `f:${e.hash}:${e.mode & 0o111 ? 'x' : '-'}` : e.kind === 'link' ? `l:${e.target}` : `s:${e.size}:${e.mtimeMs}`);
  const added: string[] = [];
  const changed: string[] = [];
  for (const [p, e] of Object.entries(b)) {
    const was = a[p];
    if (was === undefined) added.push(p);
    else if (content(was) !== content(e)) changed.push(p);
  }
  const removed = Object.keys(a).filter((p) => b[p] === undefined);
  return { added: added.sort(), removed: removed.sort(), changed: changed.sort() };
}

/**
 * Whether a symbolic link at `rel` pointing at `target` stays inside the workspace, judged
 * on the text alone (nothing is followed): absolute targets and `..` that climb above the
 * root are outside.
 */
export function linkStaysInside(rel: string, target: string): boolean {
  if (target.startsWith('/')) return false;
  const parts = rel.split('/').slice(0, -1);
  for (const segment of target.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') {
      if (parts.length === 0) return false;
      parts.pop();
    } else parts.push(segment);
  }
  return true;
}
