// The workspace opened once, as a descriptor, for the sandbox to mount. bubblewrap's
// `--bind <path>` looks the path up again when it mounts it, and so do mkdir, spawn's cwd
// and every later use of a name: whoever can rename a parent of the workspace (a session
// whose workspace holds this one) can swap it for a symlink between Keel's check and the
// mount. A descriptor opened component by component with O_NOFOLLOW names the directory
// that was checked, whatever happens to its path afterwards; bubblewrap binds it with
// `--bind-fd`, and Keel's own uses go through /proc/self/fd/N, which the kernel resolves to
// the open file, never by name.
import { closeSync, constants, mkdirSync, openSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { ToolError, workspaceGone } from './workspace';

/** Linux's O_PATH (the same on x86_64 and aarch64); node does not export it. */
const O_PATH = 0o10000000;
const DIRECTORY = O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** The path of an open descriptor through /proc: resolved through the open file, not a name. */
export function fdPath(fd: number, rel = ''): string {
  return rel ? `/proc/self/fd/${fd}/${rel}` : `/proc/self/fd/${fd}`;
}

/**
 * Opens `rel` (a relative path of plain names) under the directory `dirFd`, one component
 * at a time, refusing a symlink at any of them. Answers an O_PATH descriptor, or throws.
 */
export function openBeneath(dirFd: number, rel: string, directory = true): number {
  let fd = dirFd;
  const names = rel.split('/').filter((part) => part !== '' && part !== '.');
  for (const [i, name] of names.entries()) {
    if (name === '..') throw new ToolError(`${rel}: ".." is not followed`);
    // The last component may be a file (a worktree's `.git`) when the caller says so.
    const next = openSync(fdPath(fd, name), directory || i < names.length - 1 ? DIRECTORY : O_PATH | constants.O_NOFOLLOW);
    if (fd !== dirFd) closeSync(fd);
    fd = next;
  }
  return fd === dirFd ? openSync(fdPath(dirFd), DIRECTORY) : fd;
}

/**
 * The workspace root (an absolute real path) as a descriptor, opened from `/` one component
 * at a time without following a symlink; it must still be where it was pinned.
 */
export function pinWorkspace(root: string): number {
  if (!path.isAbsolute(root)) throw new Error(`workspace must be an absolute path, got ${JSON.stringify(root)}`);
  const top = openSync('/', DIRECTORY);
  let fd: number;
  try {
    fd = openBeneath(top, root.slice(1));
  } catch (error) {
    // Not there at all: deleted or unmounted, an error of its own (never re-created empty).
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw workspaceGone(root);
    throw new ToolError(`the workspace ${root} cannot be opened without following a symlink (${(error as NodeJS.ErrnoException).code ?? String(error)}): a part of its path was replaced; refused`);
  } finally {
    closeSync(top);
  }
  // Renamed since it was opened (moved away and something else put in its place): refuse.
  const now = readlinkSync(fdPath(fd));
  if (now !== root) {
    closeSync(fd);
    throw new ToolError(`the workspace ${root} was moved while it was being opened; refused`);
  }
  return fd;
}

/** Keel's `.keel/` under a pinned workspace, made if missing, as a descriptor; never through a symlink. */
export function pinKeelDir(workspaceFd: number, keelDir: string): number {
  try {
    mkdirSync(fdPath(workspaceFd, keelDir));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  try {
    return openBeneath(workspaceFd, keelDir);
  } catch (error) {
    throw new ToolError(`${keelDir} is not a directory (${(error as NodeJS.ErrnoException).code ?? String(error)}); Keel's state directory was replaced`);
  }
}
