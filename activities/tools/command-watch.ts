// What the kernel cannot limit for a command by itself, watched while it runs: the growth of
// its workspace (a disk budget) and, where no memory cgroup holds the tree
// (command-cgroup.ts), the tree's memory. Polled, not event-driven: both are cheap to read
// (one statfs; a cgroup's counter or the tree's /proc entries), and a poll every 250 ms
// bounds what a command gets past a limit to what it writes or allocates in that time.
//
// The disk budget is the workspace's growth during one command, measured two ways that must
// both pass the budget: the free space of the file system that holds the workspace fell by
// more than it (cheap, and what the host feels — but other writers on that disk count too),
// and the command's own processes wrote more than it (the kernel's per-process write_bytes,
// /proc/<pid>/io, which counts every byte sent to a disk, so rewrites of one file count
// again and the sandbox's RAM-backed /tmp not at all). Not a size-limited mount: the
// workspace is the human's directory, written in place (no loop image or overlay that would
// need copying back), and Debian's ext4/xfs project quotas need the file system mounted
// with them, which Keel cannot assume.
import fs from 'node:fs/promises';
import type { CommandCgroup } from './command-cgroup';

export type WatchedLimit = 'memory' | 'disk';

export interface CommandWatchSpec {
  /** The process the command's tree hangs from (the spawned one). */
  rootPid: number;
  /** A path on the workspace's file system (statfs only; nothing is opened by it). */
  workspace: string;
  memoryBytes: number;
  diskBytes: number;
  cgroup: CommandCgroup | undefined;
  /** Called once, with the first limit passed. */
  onLimit: (kind: WatchedLimit) => void;
}

export interface CommandWatch {
  /** Stops polling, after one last look (a limit passed just before the command ended counts). */
  stop(): Promise<WatchedLimit | undefined>;
}

const POLL_MS = 250;

export async function watchCommand(spec: CommandWatchSpec): Promise<CommandWatch> {
  const startFree = await freeBytes(spec.workspace);
  let seen: WatchedLimit | undefined;
  let busy: Promise<void> = Promise.resolve();
  const check = async (): Promise<void> => {
    if (seen) return;
    const kind = await limitPassed(spec, startFree);
    if (kind && !seen) {
      seen = kind;
      spec.onLimit(kind);
    }
  };
  const timer = setInterval(() => {
    // One look at a time: a slow /proc walk on a busy machine must not pile up.
    busy = busy.then(check).catch(() => undefined);
  }, POLL_MS);
  return {
    async stop() {
      clearInterval(timer);
      await busy;
      await check().catch(() => undefined);
      return seen;
    },
  };
}

async function limitPassed(spec: CommandWatchSpec, startFree: number | undefined): Promise<WatchedLimit | undefined> {
  if (spec.cgroup?.limitsMemory) {
    if ((await spec.cgroup.oomKills()) > 0) return 'memory';
  } else if ((await treeSum(spec.rootPid, residentBytes)) > spec.memoryBytes) return 'memory';
  if (startFree !== undefined) {
    const now = await freeBytes(spec.workspace);
    if (now !== undefined && startFree - now > spec.diskBytes && (await treeSum(spec.rootPid, writtenBytes)) > spec.diskBytes) return 'disk';
  }
  return undefined;
}

async function freeBytes(dir: string): Promise<number | undefined> {
  try {
    const s = await fs.statfs(dir);
    return s.bavail * s.bsize;
  } catch {
    return undefined;
  }
}

/**
 * The pids of `root` and everything below it (the sandbox's own pid namespace included).
 * Asynchronous reads: a command with a thousand processes costs the thread pool, not the
 * worker's event loop.
 */
export async function treeOf(root: number): Promise<number[]> {
  const names = (await fs.readdir('/proc').catch(() => [] as string[])).filter((n) => /^\d+$/.test(n));
  const children = new Map<number, number[]>();
  await Promise.all(
    names.map(async (name) => {
      const stat = await fs.readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
      if (!stat) return;
      // pid (comm) state ppid …: comm may hold spaces and parentheses, so read after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(name));
      children.set(ppid, list);
    }),
  );
  const out: number[] = [];
  const stack = [root];
  while (stack.length) {
    const pid = stack.pop()!;
    out.push(pid);
    stack.push(...(children.get(pid) ?? []));
  }
  return out;
}

async function treeSum(root: number, of: (pid: number) => Promise<number>): Promise<number> {
  let total = 0;
  for (const value of await Promise.all((await treeOf(root)).map(of))) total += value;
  return total;
}

/** Resident memory (VmRSS), bytes; 0 for a process gone or not readable. */
async function residentBytes(pid: number): Promise<number> {
  const text = await fs.readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(text)?.[1] ?? 0) * 1024;
}

/** Bytes the process (and the children it reaped) sent to a disk, less what was deleted before it got there. */
async function writtenBytes(pid: number): Promise<number> {
  const text = await fs.readFile(`/proc/${pid}/io`, 'utf8').catch(() => '');
  const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)`, 'm').exec(text)?.[1] ?? 0);
  return Math.max(0, field('write_bytes') - field('cancelled_write_bytes'));
}
