// A workspace held by descriptors while a checkpoint reads it or a restore lays it out
// (activities/workspace-checkpoint.ts). Both run in the worker, outside any sandbox, as the
// worker's user (root in CI), over a tree that whatever the session runs can rename: a
// command, an MCP server, a nested session's agent. A name checked and then used again is
// resolved twice, and a directory exchanged with a symlink in between takes the read or
// the write outside (test/escapes/checkpoint-race.ts did both: outside secrets kept in a
// checkpoint, files written and removed outside by a restore). So every directory is
// opened from its parent's descriptor, one name at a time, never through a link
// (activities/tools/pinned-workspace.ts), and every call goes through /proc/self/fd/N/name:
// the kernel looks `name` up in the directory that was opened, whatever its path is now.
// A directory swapped for a link is refused (ELOOP/ENOTDIR), never followed; one renamed
// elsewhere in the workspace is still inside it.
import { closeSync, constants, type Dirent, fchmodSync, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readlinkSync, renameSync, rmdirSync, type Stats, symlinkSync, unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';
import { fdPath, openBeneath, pinWorkspace } from './tools/pinned-workspace';

/** Directories kept open between calls (a walk goes down and back up; a restore writes file after file in one directory). */
const CACHED_DIRS = 128;

const split = (rel: string): [parent: string, name: string] => {
  const slash = rel.lastIndexOf('/');
  return slash < 0 ? ['', rel] : [rel.slice(0, slash), rel.slice(slash + 1)];
};

const errno = (error: unknown): string | undefined => (error as NodeJS.ErrnoException).code;

/** An error that names the workspace path, not /proc/self/fd/N/…, keeping its code (callers decide by it). */
function gone(rel: string, error: unknown): Error {
  const code = errno(error);
  const what = code === 'ENOENT' ? 'is gone' : code === 'ELOOP' || code === 'ENOTDIR' ? 'is no longer a directory (a link or a file was put in its place meanwhile; not followed)' : `cannot be opened (${code ?? String(error)})`;
  return Object.assign(new Error(`${rel} in the workspace ${what}`), { code });
}

export class PinnedTree {
  private readonly root: number;
  /** Workspace-relative directory → an O_PATH descriptor; the most recently used last. */
  private readonly dirs = new Map<string, number>();

  /** `root`: the workspace's real absolute path; refused when a part of it is a link now. */
  constructor(root: string) {
    this.root = pinWorkspace(path.resolve(root));
  }

  close(): void {
    for (const fd of this.dirs.values()) closeSync(fd);
    this.dirs.clear();
    closeSync(this.root);
  }

  /**
   * The directory at `rel` ('' is the root), opened without following a link at any part;
   * throws (ENOENT, ENOTDIR, ELOOP) when a part is not a directory now. The descriptor is
   * valid until the next call on this tree.
   */
  dir(rel: string): number {
    if (rel === '') return this.root;
    const hit = this.dirs.get(rel);
    if (hit !== undefined) {
      this.dirs.delete(rel);
      this.dirs.set(rel, hit);
      return hit;
    }
    const [parent, name] = split(rel);
    let fd: number;
    try {
      fd = openBeneath(this.dir(parent), name);
    } catch (error) {
      throw gone(rel, error);
    }
    this.dirs.set(rel, fd);
    if (this.dirs.size > CACHED_DIRS) {
      const [oldest, old] = this.dirs.entries().next().value as [string, number];
      this.dirs.delete(oldest);
      closeSync(old);
    }
    return fd;
  }

  /** Forgets `rel` and what is under it (removed or replaced: a new one is opened next time). */
  private forget(rel: string): void {
    for (const [at, fd] of this.dirs) {
      if (at === rel || at.startsWith(`${rel}/`)) {
        this.dirs.delete(at);
        closeSync(fd);
      }
    }
  }

  /** Where `rel` is, as a path through its parent's descriptor. */
  private at(rel: string): string {
    const [parent, name] = split(rel);
    return fdPath(this.dir(parent), name);
  }

  entries(rel: string): Dirent[] {
    return readdirSync(fdPath(this.dir(rel)), { withFileTypes: true });
  }

  lstat(rel: string): Stats | undefined {
    return lstatSync(this.at(rel), { throwIfNoEntry: false });
  }

  readlink(rel: string): string {
    return readlinkSync(this.at(rel));
  }

  /** A file's content and stat, never through a link; null when it is gone or not a file now. */
  read(rel: string): { content: Buffer; stats: Stats } | null {
    let fd: number;
    try {
      fd = openSync(this.at(rel), constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch {
      return null;
    }
    try {
      const stats = fstatSync(fd);
      return stats.isFile() ? { content: readFileSync(fd), stats } : null;
    } finally {
      closeSync(fd);
    }
  }

  mkdir(rel: string): void {
    mkdirSync(this.at(rel));
  }

  /** Removes a file or link (ENOENT is fine); never a directory. */
  unlink(rel: string): void {
    try {
      unlinkSync(this.at(rel));
    } catch (error) {
      if (errno(error) !== 'ENOENT') throw error;
    }
  }

  /** Removes an empty directory. */
  rmdir(rel: string): void {
    const where = this.at(rel);
    this.forget(rel);
    rmdirSync(where);
  }

  /**
   * Removes whatever is at `rel`, a directory with everything in it: each directory is opened
   * by descriptor before what is in it goes, so a link put in its place is removed, not
   * followed.
   */
  remove(rel: string): void {
    const st = this.lstat(rel);
    if (st === undefined) return;
    if (!st.isDirectory()) return this.unlink(rel);
    let inside: Dirent[];
    try {
      inside = this.entries(rel);
    } catch (error) {
      // Replaced by a link or a file since the lstat: that goes instead.
      if (errno(error) === 'ENOTDIR' || errno(error) === 'ELOOP') return this.unlink(rel);
      if (errno(error) === 'ENOENT') return;
      throw error;
    }
    for (const entry of inside) this.remove(`${rel}/${entry.name}`);
    try {
      this.rmdir(rel);
    } catch (error) {
      if (errno(error) !== 'ENOENT') throw error;
    }
  }

  symlink(target: string, rel: string): void {
    symlinkSync(target, this.at(rel));
  }

  /**
   * Writes `content` at `rel` by a new temporary file (O_EXCL | O_NOFOLLOW) in the same
   * directory and a rename over the name: a link at the name is replaced, not written through.
   */
  replaceFile(rel: string, content: Buffer, mode: number, tmpName: string): Stats {
    const [parent] = split(rel);
    const tmp = parent === '' ? tmpName : `${parent}/${tmpName}`;
    const fd = openSync(this.at(tmp), constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
    try {
      for (let done = 0; done < content.length; ) done += writeSync(fd, content, done);
      fchmodSync(fd, mode);
    } finally {
      closeSync(fd);
    }
    // Both names through one descriptor: the rename stays in the directory the file was made in.
    const dir = this.dir(parent);
    renameSync(fdPath(dir, tmpName), fdPath(dir, split(rel)[1]));
    return lstatSync(fdPath(dir, split(rel)[1]));
  }
}
