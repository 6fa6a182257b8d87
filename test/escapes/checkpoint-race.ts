// The escape route through checkpoints and restores (activities/workspace-checkpoint.ts).
// They run in the worker, outside any sandbox, as the worker's user (root in CI), over a
// workspace that whatever the session runs can change: a command, an MCP server, a nested
// session's agent. Here a process exchanges a workspace directory with a symlink to the
// outside directory in a loop (renameat2 RENAME_EXCHANGE, as the nested-workspace route
// does), while checkpoints are taken and restores run. A checkpoint must never read a file
// outside (each is restored afterwards, with no race, and searched for the secret); a
// restore must never write, change or remove anything outside.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { checkpointWorkspace, restoreWorkspace } from '../../activities/workspace-checkpoint';
import { DEFAULT_CHECKPOINT_LIMITS } from '../../machines/checkpoint-budget';
import { killGroup } from './process-group';

export interface RaceOutcome {
  attempts: number;
  /** Attempts the code refused or failed (a directory that changed under it): contained. */
  toolErrors: number;
  evidence: string[];
}

/** Every file under `dir` (links not followed) that holds `needle`. */
async function filesHolding(dir: string, needle: string): Promise<string[]> {
  const hits: string[] = [];
  for (const entry of await fs.readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const full = path.join(entry.parentPath, entry.name);
    if (readFileSync(full, 'utf8').includes(needle)) hits.push(path.relative(dir, full));
  }
  return hits;
}

export async function raceCheckpoints(options: { base: string; outside: string; secret: string; seconds: number; outsideChanged: () => Promise<string | undefined> }): Promise<RaceOutcome> {
  const { base, outside, secret } = options;
  const ws = path.join(base, 'checkpointed');
  const store = path.join(base, 'checkpoint-store');
  // `d` mirrors the outside directory's names (secret.txt, dir/inner.txt): a scan that
  // followed the swapped-in link would find them under d/ and read them; a restore would
  // remove them (they are not in the checkpoint it restores) or write beside them.
  await fs.mkdir(path.join(ws, 'd/dir'), { recursive: true });
  await fs.mkdir(path.join(ws, '.keel'));
  await fs.writeFile(path.join(ws, 'd/w.txt'), 'inside\n');
  const request = { store, workspace: ws, conversation: { head: null, append: [] }, limits: DEFAULT_CHECKPOINT_LIMITS, usedBytes: 0 };
  const clean = await checkpointWorkspace({ ...request, previous: null });
  await fs.writeFile(path.join(ws, 'd/secret.txt'), 'inside\n');
  await fs.writeFile(path.join(ws, 'd/dir/inner.txt'), 'inside\n');
  await fs.symlink(outside, path.join(ws, 'link'));
  // Exchanges `d` and `link` without end; when a restore has put a real directory at both
  // names (it removes a link where a directory must be), it makes a new link and goes on.
  const sysno = process.arch === 'arm64' ? 276 : 316;
  const loop = `perl -e 'my ($a, $b, $n) = ("d", "link", 0); while (1) { if (!-l $a && !-l $b) { rename $b, "old-" . $n++; symlink "${outside}", $b } syscall(${sysno}, -100, $a, -100, $b, 2) }'`;
  const exchanger = spawn('/bin/sh', ['-c', `cd ${ws} && exec ${loop}`], { stdio: 'ignore', detached: true });
  const outcome: RaceOutcome = { attempts: 0, toolErrors: 0, evidence: [] };
  const taken: string[] = [];
  try {
    const until = Date.now() + options.seconds * 1000;
    for (let i = 0; Date.now() < until; i += 1) {
      outcome.attempts += 1;
      try {
        if (i % 2 === 0) taken.push((await checkpointWorkspace({ ...request, previous: null })).manifest);
        else await restoreWorkspace({ store, workspace: ws, manifest: clean.manifest, mode: 'in_place' });
      } catch {
        outcome.toolErrors += 1;
      }
      const changed = await options.outsideChanged();
      if (changed) outcome.evidence.push(`${i % 2 === 0 ? 'checkpoint' : 'restore'} while d/ was exchanged with a link to outside: ${changed}`);
    }
  } finally {
    await killGroup(exchanger);
  }
  // What each checkpoint kept, laid out with nothing racing: no outside byte may be in it.
  for (const [k, manifest] of taken.entries()) {
    const laid = path.join(base, `checkpoint-laid-${k}`);
    await restoreWorkspace({ store, workspace: laid, manifest, mode: 'fresh' });
    const hits = await filesHolding(laid, secret);
    if (hits.length > 0) outcome.evidence.push(`a checkpoint taken while d/ was exchanged with a link to outside kept the outside secret (${hits.join(', ')})`);
    await fs.rm(laid, { recursive: true, force: true });
  }
  await fs.rm(ws, { recursive: true, force: true });
  await fs.rm(store, { recursive: true, force: true });
  return outcome;
}
