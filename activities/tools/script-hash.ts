// The content of the workspace files a command runs (machines/script-binding.ts finds the
// words that may name them), hashed just before it runs. Each word is resolved once, to a
// real path: a symlink is followed, and only a regular file inside the workspace counts —
// a program of the system (/bin/sh) or a file outside binds nothing.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { scriptWordsOf, type ScriptHashes } from '../../machines/script-binding';
import type { Workspace } from './workspace';

export interface RunScripts {
  /** Workspace-relative paths (as named, `.`/`..` resolved) of every word that names a place inside the workspace. */
  runs: string[];
  /** Of those, the ones that are a regular file inside the workspace (after symlinks), with their hashes. */
  hashes: ScriptHashes;
}

/** The workspace files `command` runs, from `cwd` (a real path inside the workspace), hashed now. */
export async function hashScripts(ws: Workspace, cwd: string, command: unknown): Promise<RunScripts> {
  const inside = (p: string) => p === ws.root || p.startsWith(`${ws.root}/`);
  const runs: string[] = [];
  const hashes: ScriptHashes = {};
  for (const word of scriptWordsOf(command)) {
    const named = path.resolve(cwd, word);
    if (!inside(named)) continue;
    const rel = path.relative(ws.root, named);
    runs.push(rel);
    // A symlink out of the workspace, a directory or nothing: bound to no content, so never "unchanged".
    const real = await fs.realpath(named).catch(() => null);
    if (real === null || !inside(real)) continue;
    const stat = await fs.stat(real).catch(() => null);
    if (stat?.isFile()) hashes[rel] = await sha256Of(real);
  }
  return { runs, hashes };
}

function sha256Of(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    createReadStream(file)
      .on('data', (chunk) => hash.update(chunk))
      .on('error', reject)
      .on('end', () => resolve(`sha256:${hash.digest('hex')}`));
  });
}
