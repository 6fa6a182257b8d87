// What the sandbox lays over the writable workspace so that a command cannot plant files
// that grant or run things later: every `.git` (directory, or the `gitdir:` file of a
// worktree) at any depth is mounted read-only; every `.keel/` below the root — another
// session's state, policy and conversations — is replaced by an empty read-only tmpfs, and
// so is the root's conversation store. The root's own `.keel/` is already read-only
// (bwrapArgs). The list is built when the command starts: a `.git` the command creates
// itself is not covered (see README, "Protected paths").
import { lstatSync, readdirSync, realpathSync } from 'node:fs';
import path from 'node:path';

const KEEL = '.keel';
const GIT = '.git';
/** The root's conversation store (the default; a worker's KEEL_STORE_DIR lives elsewhere). */
const ROOT_STORE = path.join(KEEL, 'store');

/** The bwrap arguments, in order, to protect `.git` and `.keel` under a workspace (real path). */
export function protectedMountArgs(workspace: string): string[] {
  const args: string[] = [];
  const hide = (p: string) => args.push('--tmpfs', p, '--remount-ro', p);
  const readOnly = (p: string) => args.push('--ro-bind', p, p);
  const inside = (p: string) => p === workspace || p.startsWith(`${workspace}/`);

  if (isDirectory(path.join(workspace, ROOT_STORE))) hide(path.join(workspace, ROOT_STORE));
  const pending = [workspace];
  while (pending.length > 0) {
    const dir = pending.pop() as string;
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      continue; // unreadable or vanished: nothing the command could reach through it either
    }
    for (const entry of entries) {
      const full = path.join(dir, entry.name);
      if (entry.name === GIT) {
        if (entry.isSymbolicLink()) {
          // git follows a `.git` symlink; protect what it leads to when that is in the workspace.
          const target = realOrUndefined(full);
          if (target && inside(target)) readOnly(target);
        } else {
          readOnly(full);
        }
        continue;
      }
      if (entry.name === KEEL) {
        if (dir !== workspace && entry.isDirectory()) hide(full);
        continue;
      }
      if (entry.isDirectory()) pending.push(full);
    }
  }
  return args;
}

function isDirectory(p: string): boolean {
  try {
    return lstatSync(p).isDirectory();
  } catch {
    return false;
  }
}

function realOrUndefined(p: string): string | undefined {
  try {
    return realpathSync(p);
  } catch {
    return undefined;
  }
}
