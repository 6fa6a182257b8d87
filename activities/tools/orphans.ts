// Commands whose worker died. A command runs in its own process group, so when the
// worker process is killed the group lives on. Each running command is recorded in the
// workspace; the next command in that workspace (from any worker on the same host)
// kills groups whose worker is gone, checking the group leader's start time so that a
// reused pid is never hit.
import { createHash } from 'node:crypto';
import { constants, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { errorCode, KEEL_DIR, type Workspace, writeFileInside } from './workspace';

const RUNNING_DIR = `${KEEL_DIR}/state/running`;

export interface RunningCommand {
  pgid: number;
  /** Start time of the group leader, in clock ticks since boot (/proc/<pid>/stat field 22). */
  startTicks: string | undefined;
  workerPid: number;
  workerStartTicks: string | undefined;
  host: string;
  command: string;
  callKey: string;
}

function recordName(callKey: string): string {
  return `${createHash('sha256').update(callKey).digest('hex').slice(0, 32)}.json`;
}

export function processStartTicks(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

export async function recordRunning(ws: Workspace, callKey: string, pgid: number, command: string): Promise<() => Promise<void>> {
  const record: RunningCommand = {
    pgid,
    startTicks: processStartTicks(pgid),
    workerPid: process.pid,
    workerStartTicks: processStartTicks(process.pid),
    host: os.hostname(),
    command,
    callKey,
  };
  const rel = `${RUNNING_DIR}/${recordName(callKey)}`;
  await writeFileInside(ws, rel, JSON.stringify(record), { allowKeelDir: true });
  return async () => {
    await fs.rm(path.join(ws.root, rel), { force: true });
  };
}

/** Kills the process groups of commands whose worker died; returns what it killed. */
export async function reapOrphanedCommands(ws: Workspace): Promise<RunningCommand[]> {
  const dir = path.join(ws.root, RUNNING_DIR);
  let names: string[];
  try {
    // The directory must be the real one, not a symlink planted by a command.
    const stats = await fs.lstat(dir);
    if (!stats.isDirectory()) return [];
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
    const workerAlive = record.workerStartTicks !== undefined && processStartTicks(record.workerPid) === record.workerStartTicks;
    if (workerAlive) continue;
    if (record.startTicks !== undefined && processStartTicks(record.pgid) === record.startTicks) {
      try {
        process.kill(-record.pgid, 'SIGKILL');
        reaped.push(record);
      } catch {
        // already gone
      }
    }
    await fs.rm(file, { force: true });
  }
  return reaped;
}
