// The workspace walk of a checkpoint and a restore (activities/workspace-checkpoint.ts), with
// synchronous file system calls in slices. Measured on 10,000 files (bench/checkpoint.ts,
// docs/fork-and-rewind.md): a promise per `lstat` costs ~55 µs of CPU, a synchronous one ~5;
// opening and reading a file through a FileHandle ~200 µs, `readFileSync` ~20 with its hash.
// A walk of 100,000 files was minutes of CPU on a loaded machine, most of it promise and
// thread-pool overhead. So the calls are synchronous, and the event loop is given back
// after every slice of SLICE_MS (a heartbeat, another activity, a cancellation go through
// between slices): the loop is held a few milliseconds at a time, never for the whole walk.
// Every name is looked up through a descriptor of its directory (activities/workspace-tree.ts
// says why): a directory exchanged with a link to outside during the walk is not followed.
import { type Dirent } from 'node:fs';
import { checkpointIgnores, linkStaysInside, type FileStat } from '../machines/checkpoint-manifest';
import type { PinnedTree } from './workspace-tree';

/** How long the walk holds the event loop before giving it back. */
export const SLICE_MS = 8;

/** Gives the event loop back once a slice is used up; `onYield` runs then (a heartbeat). */
export class Slices {
  private since = performance.now();
  constructor(private readonly onYield: () => void = () => {}) {}

  async tick(): Promise<void> {
    if (performance.now() - this.since < SLICE_MS) return;
    this.onYield();
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.since = performance.now();
  }
}

export type Scanned = { rel: string; entry: { kind: 'file'; stat: FileStat } | { kind: 'link'; target: string } };

export interface ScanResult {
  found: Scanned[];
  incomplete: string | null;
  skippedLinks: { path: string; reason: string }[];
}

export const statOf = (st: { size: number; mtimeMs: number; mode: number; ino: number; ctimeMs: number }): FileStat => ({
  size: st.size,
  mtimeMs: Math.floor(st.mtimeMs),
  mode: st.mode & 0o777,
  ino: st.ino,
  ctimeMs: Math.floor(st.ctimeMs),
});

/**
 * Every file and link in `tree` (not `.keel/`, `.git/`), never following a link. Stops at
 * `maxFiles` or `maxScanMs` and says why.
 */
export async function scanWorkspace(tree: PinnedTree, limits: { maxFiles: number; maxScanMs: number }, slices: Slices): Promise<ScanResult> {
  const started = Date.now();
  const found: Scanned[] = [];
  const skippedLinks: { path: string; reason: string }[] = [];
  const dirs: string[] = [''];
  let incomplete: string | null = null;
  walk: while (dirs.length > 0) {
    const dirRel = dirs.pop()!;
    let entries: Dirent[];
    try {
      entries = tree.entries(dirRel);
    } catch (error) {
      // A directory removed or replaced by a link while scanning, or one the worker cannot read: not in the checkpoint.
      if (dirRel === '') throw error;
      continue;
    }
    for (const d of entries) {
      const rel = dirRel === '' ? d.name : `${dirRel}/${d.name}`;
      if (checkpointIgnores(rel)) continue;
      if (d.isDirectory()) dirs.push(rel);
      else if (d.isSymbolicLink()) {
        let target: string;
        try {
          target = tree.readlink(rel);
        } catch {
          continue;
        }
        if (linkStaysInside(rel, target)) found.push({ rel, entry: { kind: 'link', target } });
        else skippedLinks.push({ path: rel, reason: `${rel}: a symbolic link to ${target}, outside the workspace: not followed and not kept` });
      } else if (d.isFile()) {
        let st;
        try {
          st = tree.lstat(rel);
        } catch {
          continue; // its directory is gone or was replaced since it was listed
        }
        if (st === undefined || !st.isFile()) continue;
        found.push({ rel, entry: { kind: 'file', stat: statOf(st) } });
      }
      if (found.length >= limits.maxFiles) {
        incomplete = `the workspace has more than ${limits.maxFiles.toLocaleString('en-US')} files (checkpoints.maxFiles): files past them are kept as they were at the last checkpoint`;
        break walk;
      }
      if (found.length % 1000 === 0) {
        if (Date.now() - started > limits.maxScanMs) {
          incomplete = `the scan took longer than ${limits.maxScanMs} ms (checkpoints.maxScanMs): files not reached are kept as they were at the last checkpoint`;
          break walk;
        }
        await slices.tick();
      }
    }
    await slices.tick();
  }
  return { found, incomplete, skippedLinks };
}
