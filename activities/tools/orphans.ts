// Commands whose worker died. A command runs in its own process group, so when the
// worker process is killed the group lives on. Each running command is recorded in a
// directory of the worker's user outside every workspace (a record in the workspace
// could be forged by a command to make the next one kill any process of this user);
// the next command in that workspace (from any worker on the same host) kills groups
// whose worker is gone. Before killing, it checks the group leader's start time (a
// reused pid is never hit) and that the leader carries the random token Keel gave the
// command in its environment (a record naming some other process is ignored).
import { createHash } from 'node:crypto';
import { constants, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { keelEnv } from '../../shared/env';
import { errorCode, type Workspace } from './workspace';

/** The environment variable that marks a process as a command Keel started. */
export const RUN_TOKEN_ENV = 'KEEL_RUN_TOKEN';

/**
 * Where records of one workspace's running commands live: `$KEEL_RUN_DIR` or a
 * directory of this user under the system temporary directory, never in the workspace.
 */
export function runningDir(ws: Workspace, env: NodeJS.ProcessEnv = process.env): string {
  const base = keelEnv(env, 'KEEL_RUN_DIR') ?? path.join(os.tmpdir(), `keel-run-${os.userInfo().uid}`);
  return path.join(base, createHash('sha256').update(ws.root).digest('hex').slice(0, 24));
}

/** Creates the record directory, private to this user; refuses one that is not ours. */
async function ensurePrivateDir(dir: string): Promise<void> {
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  for (const d of [path.dirname(dir), dir]) {
    const stats = await fs.lstat(d);
    if (!stats.isDirectory() || stats.uid !== os.userInfo().uid || (stats.mode & 0o022) !== 0) {
      throw new Error(`${d} must be a directory of this user, not writable by others, to hold command records`);
    }
  }
}

export function newRunToken(): string {
  return randomBytes(16).toString('hex');
}

function carriesToken(pid: number, token: string | undefined): boolean {
  if (!token) return false;
  try {
    const environ = readFileSync(`/proc/${pid}/environ`).toString('latin1').split('\0');
    return environ.includes(`${RUN_TOKEN_ENV}=${token}`);
  } catch {
    return false;
  }
}

export interface RunningCommand {
  pgid: number;
  /** Start time of the group leader, in clock ticks since boot (/proc/<pid>/stat field 22). */
  startTicks: string | undefined;
  workerPid: number;
  workerStartTicks: string | undefined;
  host: string;
  command: string;
  callKey: string;
  /** The value of KEEL_RUN_TOKEN in the command's environment. */
  token: string;
}

function recordName(callKey: string): string {
  return `${createHash('sha256').update(callKey).digest('hex').slice(0, 32)}.json`;
}

export function processStartTicks(pid: number): string | undefined {
  return procStat(pid)?.[19];
}

/** The fields of /proc/<pid>/stat after the command name (state first), or undefined when there is no such process. */
function procStat(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/**
 * A process that has exited but not yet been waited for keeps its /proc entry, start time
 * included: a killed worker whose parent is slow to reap it is dead all the same (the
 * tools test met one under load, and the orphan it left was not reaped).
 */
export function isZombie(pid: number): boolean {
  const state = procStat(pid)?.[0];
  return state === 'Z' || state === 'X';
}

export async function recordRunning(ws: Workspace, callKey: string, pgid: number, command: string, token: string): Promise<() => Promise<void>> {
  const record: RunningCommand = {
    pgid,
    startTicks: processStartTicks(pgid),
    workerPid: process.pid,
    workerStartTicks: processStartTicks(process.pid),
    host: os.hostname(),
    command,
    callKey,
    token,
  };
  const dir = runningDir(ws);
  const file = path.join(dir, recordName(callKey));
  const temp = `${file}.${process.pid}.tmp`;
  // The directory goes with the workspace's last record (below), so a command of the same
  // workspace ending just now may remove it between its making and this write: made again.
  for (let attempt = 1; ; attempt++) {
    try {
      await ensurePrivateDir(dir);
      await fs.writeFile(temp, JSON.stringify(record), { mode: 0o600, flag: 'w' });
      break;
    } catch (error) {
      if (errorCode(error) !== 'ENOENT' || attempt === 5) throw error;
    }
  }
  await fs.rename(temp, file);
  return async () => {
    await fs.rm(file, { force: true });
    // Removed when empty (ENOTEMPTY otherwise): a directory for every workspace that ever ran a
    // command is not left in the temp directory.
    await fs.rmdir(dir).catch(() => {});
  };
}

/** Kills the process groups of commands whose worker died; returns what it killed. */
export async function reapOrphanedCommands(ws: Workspace): Promise<RunningCommand[]> {
  const dir = runningDir(ws);
  let names: string[];
  try {
    // The directory must be the real one, ours, and private.
    const stats = await fs.lstat(dir);
    if (!stats.isDirectory() || stats.uid !== os.userInfo().uid || (stats.mode & 0o022) !== 0) return [];
    names = await fs.readdir(dir);
  } catch {
    return [];
  }
  const reaped: RunningCommand[] = [];
  for (const name of names) {
    const file = path.join(dir, name);
    let record: RunningCommand;
    try {
      const handle = await fs.open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
      try {
        record = JSON.parse(await handle.readFile('utf8')) as RunningCommand;
      } finally {
        await handle.close();
      }
    } catch (error) {
      // Gone meanwhile, a symlink planted in its place, or half-written: not a record to act on.
      if (errorCode(error) !== undefined || error instanceof SyntaxError) continue;
      throw error;
    }
    if (record.host !== os.hostname()) continue;
    const workerAlive = record.workerStartTicks !== undefined && processStartTicks(record.workerPid) === record.workerStartTicks && !isZombie(record.workerPid);
    if (workerAlive) continue;
    if (record.startTicks !== undefined && processStartTicks(record.pgid) === record.startTicks && carriesToken(record.pgid, record.token)) {
      try {
        process.kill(-record.pgid, 'SIGKILL');
        reaped.push(record);
      } catch {
        // already gone
      }
    }
    await fs.rm(file, { force: true });
  }
  // As a command's own record does (recordRunning): the directory goes with the last record.
  await fs.rmdir(dir).catch(() => {});
  return reaped;
}
