// Walks a directory tree of the workspace without ever following a symlink: each
// subdirectory is opened with O_NOFOLLOW through its parent's descriptor, so a
// directory swapped for a symlink mid-walk is skipped rather than entered.
import { constants } from 'node:fs';
import fs, { type FileHandle } from 'node:fs/promises';
import { agentMayRead } from '../../machines/protected-paths';
import { displayName, type EntryKind, openExisting, relativePath, ToolError, type Workspace } from './workspace';

/** glob's pattern and grep's glob filter: the same rule and the same words for both. */
export function assertGlobInside(pattern: string): void {
  if (pattern.startsWith('/') || pattern.startsWith('~') || pattern.split('/').includes('..')) {
    throw new ToolError(`glob pattern ${JSON.stringify(pattern)} must stay inside the workspace: no leading / or ~ and no ..`);
  }
}

export interface WalkEntry {
  /** Path relative to the walk's start, as shown to the model. */
  rel: string;
  kind: EntryKind;
  /** A path that reaches this entry through verified descriptors (for opening files). */
  access: Buffer;
}

/** Directories no walk descends into unless the walk starts inside them. */
export const SKIPPED_DIRS = new Set(['.git', '.keel', 'node_modules']);

export interface WalkLimits {
  maxEntries: number;
  signal?: AbortSignal;
  /** Whether to descend into a directory (path relative to the walk's start). */
  descend?: (rel: string, name: string) => boolean;
}

/** The default: everything but .git, .keel and node_modules. */
export function descendUnlessSkipped(_rel: string, name: string): boolean {
  return !SKIPPED_DIRS.has(name);
}

export async function* walk(ws: Workspace, start: string, limits: WalkLimits): AsyncGenerator<WalkEntry> {
  const root = await openExisting(ws, start, 'directory');
  const startRel = relativePath(start);
  let seen = 0;
  const visit = async function* (handle: FileHandle, prefix: string): AsyncGenerator<WalkEntry> {
    const base = `/proc/self/fd/${handle.fd}`;
    const entries = await fs.readdir(base, { withFileTypes: true, encoding: 'buffer' });
    entries.sort((a, b) => Buffer.compare(a.name, b.name));
    for (const entry of entries) {
      if (limits.signal?.aborted) return;
      if (seen >= limits.maxEntries) return;
      seen += 1;
      const name = displayName(entry.name);
      const rel = prefix ? `${prefix}/${name}` : name;
      // Another session's `.keel/` (at any depth) is neither shown nor entered.
      if (!agentMayRead(startRel === '.' ? rel : `${startRel}/${rel}`)) continue;
      const access = Buffer.concat([Buffer.from(`${base}/`), entry.name]);
      const kind: EntryKind = entry.isDirectory() ? 'dir' : entry.isSymbolicLink() ? 'symlink' : entry.isFile() ? 'file' : 'other';
      yield { rel, kind, access };
      if (kind !== 'dir' || !(limits.descend ?? descendUnlessSkipped)(rel, name)) continue;
      let child: FileHandle;
      try {
        child = await fs.open(access, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
      } catch {
        continue; // vanished, swapped for a symlink, or unreadable: not ours to walk
      }
      try {
        yield* visit(child, rel);
      } finally {
        await child.close();
      }
    }
  };
  try {
    yield* visit(root.handle, '');
  } finally {
    await root.handle.close();
  }
}

/** Opens a file found by a walk, refusing a symlink in its place. */
export async function openWalked(entry: WalkEntry): Promise<FileHandle | undefined> {
  try {
    return await fs.open(entry.access, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
}
