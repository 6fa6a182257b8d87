// What the sandbox lays over the writable workspace so that a command cannot plant files
// that grant or run things later: every `.git` (directory, or the `gitdir:` file of a
// worktree) at any depth is mounted read-only; every `.keel/` below the root — another
// session's state, policy and conversations — is replaced by an empty read-only tmpfs, and
// so is the root's conversation store. The root's own `.keel/` is already read-only
// (bwrapArgs). A directory holding a `.keel/` is another workspace nested in this one: it
// is mounted on itself, so that this sandbox cannot rename, exchange or remove it (a mount
// point cannot be moved) and so swap the other session's workspace for a symlink.
//
// The list is found by walking the workspace when the command starts: a `.git` the command
// creates itself is not covered (see docs/policy.md, "Protected paths"). The walk reads directories
// asynchronously (the worker's event loop keeps serving other sessions) and is bounded:
// past MAX_WALKED_DIRECTORIES directories or MAX_PROTECTED_PATHS protected paths the
// command is refused with a reason, rather than run with protection it could not finish.
import fs from 'node:fs/promises';
import path from 'node:path';
import { ToolError } from './workspace';

const KEEL = '.keel';
const GIT = '.git';
/** The root's conversation store (the default; a worker's KEEL_STORE_DIR lives elsewhere). */
const ROOT_STORE = path.join(KEEL, 'store');
export const MAX_WALKED_DIRECTORIES = 200_000;
export const MAX_PROTECTED_PATHS = 256;

export type ProtectedMount =
  /** A workspace nested in this one: mounted on itself (same level as the workspace). */
  | { kind: 'nested-root'; rel: string }
  /** A `.git`: read-only. */
  | { kind: 'read-only'; rel: string }
  /** Another workspace's `.keel/` or the root's store: an empty read-only tmpfs. */
  | { kind: 'hide'; rel: string };

/**
 * The protected paths under the workspace `root` (read through `root`, which may be a
 * /proc/self/fd path), relative to it, in the order they must be mounted: nested roots
 * first, outermost first (a later mount on a nested root would cover what lies under it).
 */
export async function findProtectedPaths(root: string, realRoot: string): Promise<ProtectedMount[]> {
  const nested: ProtectedMount[] = [];
  const rest: ProtectedMount[] = [];
  if (await isDirectory(path.join(root, ROOT_STORE))) rest.push({ kind: 'hide', rel: ROOT_STORE });
  const pending = [''];
  let walked = 0;
  const add = (list: ProtectedMount[], mount: ProtectedMount) => {
    list.push(mount);
    if (nested.length + rest.length > MAX_PROTECTED_PATHS) {
      throw new ToolError(`the workspace holds more than ${MAX_PROTECTED_PATHS} .git or nested .keel directories; the sandbox protects each with a mount and will not start with more (remove the extra ones, or run the command somewhere smaller)`);
    }
  };
  while (pending.length > 0) {
    const rel = pending.pop() as string;
    walked += 1;
    if (walked > MAX_WALKED_DIRECTORIES) {
      throw new ToolError(`the workspace holds more than ${MAX_WALKED_DIRECTORIES.toLocaleString('en-US')} directories; the sandbox could not finish finding the .git and .keel directories it must protect, so the command did not run`);
    }
    let entries;
    try {
      entries = await fs.readdir(rel ? path.join(root, rel) : root, { withFileTypes: true });
    } catch {
      continue; // unreadable or vanished: nothing the command could reach through it either
    }
    for (const entry of entries) {
      const child = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.name === GIT) {
        if (entry.isSymbolicLink()) {
          // git follows a `.git` symlink; protect what it leads to when that is in the workspace.
          const target = await fs.realpath(path.join(root, child)).catch(() => undefined);
          const relTarget = target === undefined ? undefined : path.relative(realRoot, target);
          if (relTarget && !relTarget.startsWith('..') && !path.isAbsolute(relTarget)) add(rest, { kind: 'read-only', rel: relTarget });
        } else {
          add(rest, { kind: 'read-only', rel: child });
        }
        continue;
      }
      if (entry.name === KEEL) {
        if (rel !== '' && entry.isDirectory()) {
          add(nested, { kind: 'nested-root', rel });
          add(rest, { kind: 'hide', rel: child });
        }
        continue;
      }
      if (entry.isDirectory()) pending.push(child);
    }
  }
  nested.sort((a, b) => a.rel.split('/').length - b.rel.split('/').length);
  return [...nested, ...rest];
}

async function isDirectory(p: string): Promise<boolean> {
  try {
    return (await fs.lstat(p)).isDirectory();
  } catch {
    return false;
  }
}
