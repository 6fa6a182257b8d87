// The process limit when the worker runs as root. RLIMIT_NPROC, which prlimit sets inside
// the sandbox, is not enforced for processes of the host's uid 0 (the kernel exempts the
// root user), so a fork bomb started by a root worker would fill the host's process table.
// Root can instead make a pids cgroup next to its own and start bubblewrap inside it: every
// process of the sandbox counts against pids.max. A worker that is not root needs none of
// this (its RLIMIT_NPROC holds); a root worker without a writable pids cgroup says so at start.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';

export interface PidsCgroup {
  /** The file a process writes its pid into to join. */
  procs: string;
  close(): Promise<void>;
}

let parent: Promise<string | undefined> | undefined;

/** Whether processes of this worker need a cgroup for their process limit. */
export function needsPidsCgroup(): boolean {
  return process.getuid?.() === 0;
}

/** The directory new pids cgroups go under, or undefined when there is none we may write. */
export function pidsCgroupParent(): Promise<string | undefined> {
  parent ??= findParent();
  return parent;
}

async function findParent(): Promise<string | undefined> {
  let lines: string[];
  try {
    lines = readFileSync('/proc/self/cgroup', 'utf8').split('\n');
  } catch {
    return undefined;
  }
  const v1 = lines.map((line) => /^\d+:([^:]*):(.*)$/.exec(line)).find((m) => m?.[1]?.split(',').includes('pids'));
  const v2 = lines.map((line) => /^0::(.*)$/.exec(line)).find((m) => m);
  const candidates = [
    ...(v1?.[2] !== undefined ? [path.join('/sys/fs/cgroup/pids', v1[2])] : []),
    ...(v2?.[1] !== undefined ? [path.join('/sys/fs/cgroup', v2[1])] : []),
  ];
  for (const dir of candidates) {
    const test = path.join(dir, `keel-probe-${randomBytes(4).toString('hex')}`);
    try {
      await fs.mkdir(test);
      try {
        await fs.access(path.join(test, 'pids.max'));
        return dir;
      } finally {
        await fs.rmdir(test).catch(() => undefined);
      }
    } catch {
      // not writable, or no pids controller here
    }
  }
  return undefined;
}

/** A fresh pids cgroup with `max` processes, or undefined when none can be made. */
export async function makePidsCgroup(max: number): Promise<PidsCgroup | undefined> {
  const base = await pidsCgroupParent();
  if (!base) return undefined;
  const dir = path.join(base, `keel-sandbox-${randomBytes(6).toString('hex')}`);
  try {
    await fs.mkdir(dir);
    await fs.writeFile(path.join(dir, 'pids.max'), String(max));
  } catch {
    await fs.rmdir(dir).catch(() => undefined);
    return undefined;
  }
  return {
    procs: path.join(dir, 'cgroup.procs'),
    close: async () => {
      // The sandbox's processes die with its PID namespace; give the kernel a moment to reap them.
      for (let i = 0; i < 50; i += 1) {
        try {
          await fs.rmdir(dir);
          return;
        } catch {
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }
    },
  };
}
