// A workspace checkpoint: what the workspace's files were at a turn boundary, as a chain of
// manifests in the conversation store. Each manifest holds only what changed since its
// parent (files set, paths removed), the files themselves are content-addressed blobs, so a
// turn that touched one file stores one blob and a manifest of one entry. Pure rules on
// workspace-relative posix paths: which paths a checkpoint keeps, the delta between two
// states, applying a chain, the diff shown between two turns. The activity
// (activities/workspace-checkpoint.ts) does the reading, hashing and writing.
import { protectedDirOf } from './protected-paths';

/** The manifest format: a reader refuses a manifest of a format it does not know, by name. */
export const CHECKPOINT_FORMAT = 1;

/** One path's state at a checkpoint. `skipped`: the file exists but was not kept (too big, over budget). */
export type CheckpointEntry =
  | { kind: 'file'; hash: string; size: number; mode: number; mtimeMs: number }
  | { kind: 'link'; target: string }
  | { kind: 'skipped'; reason: string; size: number; mtimeMs: number };

/** A workspace's state: every kept path → its entry. */
export type WorkspaceState = Record<string, CheckpointEntry>;

export interface CheckpointManifest {
  format: typeof CHECKPOINT_FORMAT;
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
  if (m.format !== CHECKPOINT_FORMAT) throw new Error(`checkpoint ${id} has format ${JSON.stringify(m.format)}; this worker reads format ${CHECKPOINT_FORMAT} (a newer Keel wrote it?)`);
  if (typeof m.set !== 'object' || m.set === null || !Array.isArray(m.removed) || (m.parent !== null && typeof m.parent !== 'string')) throw new Error(`checkpoint ${id} is damaged (missing fields)`);
  return { format: CHECKPOINT_FORMAT, parent: m.parent ?? null, set: m.set, removed: m.removed, incomplete: typeof m.incomplete === 'string' ? m.incomplete : null };
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

/** Whether a file scanned now must be read and hashed: anything but the same size, mtime and mode as before. */
export function needsHash(before: CheckpointEntry | undefined, now: { size: number; mtimeMs: number; mode: number }): boolean {
  return before?.kind !== 'file' || before.size !== now.size || before.mtimeMs !== now.mtimeMs || before.mode !== now.mode;
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
