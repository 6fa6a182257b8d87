// The cgroup of one sandboxed command: every process the command ever starts is in it, so
// its limits hold for the command *tree*, not per process. Per-process limits (prlimit,
// limits.ts) let two processes hold 2 GiB each under a 2 GiB limit, and RLIMIT_NPROC does
// not hold for root at all (the kernel exempts uid 0), so a fork bomb of a root worker would
// fill the host's process table.
//
// - memory: the tree's memory (memory.max, v1 memory.limit_in_bytes) is the policy's
//   `memoryMiB`; when the kernel has to kill in it (an OOM kill), the whole command is
//   stopped and reported `limit: memory` (command-watch.ts).
// - pids: pids.max is the policy's `processes`.
// - cpu: a quarter of the default weight (cpu.weight 25, v1 cpu.shares 256): a command that
//   spins on every core still leaves the worker and other sessions' commands their share;
//   it may use idle cores in full. CPU time stays per process (RLIMIT_CPU) and the timeout.
//
// Where: cgroup v2 (one directory, under the worker's own cgroup when it is delegated and
// has the controllers; a worker alone in its cgroup moves itself into a leaf `keel-worker`
// so that its cgroup may have children with controllers), or cgroup v1 (one directory per
// controller's hierarchy, under the worker's own cgroup there: root, or a delegated one).
// What is missing is said at worker start in one line (commandLimitsLine); without a memory
// controller the watcher sums the tree's resident memory instead (command-watch.ts).
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';

export type Controller = 'memory' | 'pids' | 'cpu';
const CONTROLLERS: readonly Controller[] = ['memory', 'pids', 'cpu'];

/** Where each controller's command cgroups go: a v2 directory, or one v1 hierarchy's. */
export interface CgroupParents {
  v2: string | undefined;
  v1: Partial<Record<Controller, string>>;
}

export interface CommandCgroup {
  /** cgroup.procs files a process writes its pid into to join (one per hierarchy). */
  procs: string[];
  /** The kernel's OOM kills in the tree so far (0 without a memory controller). */
  oomKills(): Promise<number>;
  /** Whether the tree's memory is limited here (else the watcher's sum is the limit). */
  limitsMemory: boolean;
  /** SIGKILL to every process in it (the ones that left the process group too). */
  kill(): Promise<void>;
  close(): Promise<void>;
}

let found: Promise<CgroupParents> | undefined;

/** The directories command cgroups go under, found (and tried) once per process. */
export function cgroupParents(): Promise<CgroupParents> {
  found ??= findParents();
  return found;
}

/** Whether this worker's process limit needs a cgroup (root: RLIMIT_NPROC does not hold). */
export function needsPidsCgroup(): boolean {
  return process.getuid?.() === 0;
}

/** Whether a command's processes are counted by a pids cgroup here. */
export async function pidsHeld(): Promise<boolean> {
  return !needsPidsCgroup() || (await controllerDir('pids')) !== undefined;
}

async function controllerDir(c: Controller): Promise<string | undefined> {
  const parents = await cgroupParents();
  return parents.v2 ?? parents.v1[c];
}

/** One line for the worker's start: which limits hold per command tree, and what stands in for the rest. */
export async function commandLimitsLine(): Promise<string> {
  const parents = await cgroupParents();
  const held = CONTROLLERS.filter((c) => parents.v2 !== undefined || parents.v1[c] !== undefined);
  const missing = CONTROLLERS.filter((c) => !held.includes(c));
  const where = parents.v2 ? `cgroup v2 under ${parents.v2}` : held.length ? `cgroup v1 (${held.map((c) => `${c}: ${parents.v1[c]}`).join(', ')})` : '';
  if (missing.length === 0) return `command limits: a cgroup per command (${where}): memory and processes of the whole command tree, a quarter CPU weight; a workspace disk budget per command`;
  const instead = [
    missing.includes('memory') ? 'memory: the resident memory of the tree summed every 0.25 s by the worker, and RLIMIT_DATA per process' : '',
    missing.includes('pids') ? (needsPidsCgroup() ? 'processes: NO limit (the worker is root, for whom RLIMIT_NPROC does not hold)' : 'processes: RLIMIT_NPROC of the sandbox user') : '',
    missing.includes('cpu') ? 'CPU: no weight (RLIMIT_CPU per process and the timeout)' : '',
  ].filter(Boolean);
  const why = process.getuid?.() === 0 ? 'no writable cgroup for it' : 'no delegated cgroup (not root)';
  return `command limits: ${held.length ? `a cgroup per command for ${held.join(', ')} (${where}); ` : ''}no cgroup for ${missing.join(', ')} (${why}), instead ${instead.join('; ')}; a workspace disk budget per command`;
}

interface MountInfo {
  root: string;
  mountpoint: string;
  type: string;
  superOptions: string[];
}

function mounts(): MountInfo[] {
  let text: string;
  try {
    text = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return [];
  }
  const out: MountInfo[] = [];
  for (const line of text.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const fields = left.split(' ');
    const [type, , superOptions] = right.split(' ');
    if (type !== 'cgroup' && type !== 'cgroup2') continue;
    out.push({ root: fields[3] ?? '/', mountpoint: fields[4] ?? '', type, superOptions: (superOptions ?? '').split(',') });
  }
  return out;
}

/** The directory of `cgroupPath` under a mount of its hierarchy, or undefined when the mount does not show it. */
function under(mount: MountInfo, cgroupPath: string): string | undefined {
  const rel = path.posix.relative(mount.root, cgroupPath);
  if (rel.startsWith('..')) return undefined;
  return path.join(mount.mountpoint, rel);
}

async function findParents(): Promise<CgroupParents> {
  const result: CgroupParents = { v2: undefined, v1: {} };
  let lines: string[];
  try {
    lines = readFileSync('/proc/self/cgroup', 'utf8').split('\n');
  } catch {
    return result;
  }
  const all = mounts();
  // v2: every controller in one place, or none of it is used (one mechanism, not a mix per controller).
  const v2Path = lines.map((line) => /^0::(.*)$/.exec(line)?.[1]).find((p) => p !== undefined);
  const v2Mount = all.find((m) => m.type === 'cgroup2');
  const v2Dir = v2Path !== undefined && v2Mount ? under(v2Mount, v2Path) : undefined;
  if (v2Dir && (await v2Ready(v2Dir))) {
    result.v2 = v2Dir;
    return result;
  }
  for (const c of CONTROLLERS) {
    const own = lines.map((line) => /^\d+:([^:]*):(.*)$/.exec(line)).find((m) => m?.[1]?.split(',').includes(c));
    const mount = all.find((m) => m.type === 'cgroup' && m.superOptions.includes(c));
    const dir = own?.[2] !== undefined && mount ? under(mount, own[2]) : undefined;
    if (dir && (await canMakeChild(dir, c, 1))) result.v1[c] = dir;
  }
  return result;
}

const LIMIT_FILE: Record<Controller, [v2: string, v1: string]> = {
  memory: ['memory.max', 'memory.limit_in_bytes'],
  pids: ['pids.max', 'pids.max'],
  cpu: ['cpu.weight', 'cpu.shares'],
};

/** Whether a child of `dir` can be made and has `c`'s limit file. */
async function canMakeChild(dir: string, c: Controller, version: 1 | 2): Promise<boolean> {
  const test = path.join(dir, `keel-probe-${randomBytes(4).toString('hex')}`);
  try {
    await fs.mkdir(test);
  } catch {
    return false;
  }
  try {
    await fs.access(path.join(test, LIMIT_FILE[c][version === 2 ? 0 : 1]));
    return true;
  } catch {
    return false;
  } finally {
    await fs.rmdir(test).catch(() => undefined);
  }
}

/**
 * A v2 cgroup where children get memory, pids and cpu: they must be in its subtree_control,
 * which a cgroup with processes of its own may not enable (the "no internal processes"
 * rule), so a worker that is alone there moves itself into a leaf first. Not touched
 * unless all three controllers are available to it.
 */
async function v2Ready(dir: string): Promise<boolean> {
  const read = (file: string) => fs.readFile(path.join(dir, file), 'utf8').then((t) => t.trim().split(/\s+/), () => [] as string[]);
  const available = await read('cgroup.controllers');
  if (!CONTROLLERS.every((c) => available.includes(c))) return false;
  const enable = () => fs.writeFile(path.join(dir, 'cgroup.subtree_control'), CONTROLLERS.map((c) => `+${c}`).join(' '));
  const on = await read('cgroup.subtree_control');
  if (!CONTROLLERS.every((c) => on.includes(c))) {
    try {
      await enable();
    } catch {
      try {
        const leaf = path.join(dir, 'keel-worker');
        await fs.mkdir(leaf).catch((e: NodeJS.ErrnoException) => (e.code === 'EEXIST' ? undefined : Promise.reject(e)));
        await fs.writeFile(path.join(leaf, 'cgroup.procs'), String(process.pid));
        await enable();
      } catch {
        return false;
      }
    }
  }
  return (await Promise.all(CONTROLLERS.map((c) => canMakeChild(dir, c, 2)))).every(Boolean);
}

/** A fresh cgroup for one command with its limits, or undefined when none can be made here. */
export async function makeCommandCgroup(limits: { memoryBytes: number; processes: number }): Promise<CommandCgroup | undefined> {
  const parents = await cgroupParents();
  const name = `keel-cmd-${randomBytes(6).toString('hex')}`;
  const dirs: { dir: string; controllers: Controller[]; version: 1 | 2 }[] = parents.v2
    ? [{ dir: path.join(parents.v2, name), controllers: [...CONTROLLERS], version: 2 }]
    : CONTROLLERS.flatMap((c) => (parents.v1[c] ? [{ dir: path.join(parents.v1[c], name), controllers: [c], version: 1 as const }] : []));
  if (dirs.length === 0) return undefined;
  const made: string[] = [];
  const write = (dir: string, file: string, value: string) => fs.writeFile(path.join(dir, file), value);
  try {
    for (const { dir, controllers, version } of dirs) {
      await fs.mkdir(dir);
      made.push(dir);
      for (const c of controllers) {
        if (c === 'memory') {
          await write(dir, LIMIT_FILE.memory[version === 2 ? 0 : 1], String(limits.memoryBytes));
          // No swap beyond the limit; and on v2 an OOM kill takes the whole tree at once.
          if (version === 2) {
            await write(dir, 'memory.swap.max', '0').catch(() => undefined);
            await write(dir, 'memory.oom.group', '1').catch(() => undefined);
          } else await write(dir, 'memory.memsw.limit_in_bytes', String(limits.memoryBytes)).catch(() => undefined);
        } else if (c === 'pids') await write(dir, 'pids.max', String(limits.processes));
        else await write(dir, LIMIT_FILE.cpu[version === 2 ? 0 : 1], version === 2 ? '25' : '256');
      }
    }
  } catch {
    for (const dir of made) await fs.rmdir(dir).catch(() => undefined);
    return undefined;
  }
  const memoryDir = dirs.find((d) => d.controllers.includes('memory'));
  const procsFiles = dirs.map((d) => path.join(d.dir, 'cgroup.procs'));
  const members = async (): Promise<number[]> => {
    const pids = new Set<number>();
    for (const file of procsFiles) {
      const text = await fs.readFile(file, 'utf8').catch(() => '');
      for (const line of text.split('\n')) if (/^\d+$/.test(line)) pids.add(Number(line));
    }
    return [...pids];
  };
  const kill = async () => {
    if (parents.v2 && (await write(dirs[0]!.dir, 'cgroup.kill', '1').then(() => true, () => false))) return;
    // v1 (or a kernel before 5.14): one by one, until none is left (a fork may land in between).
    for (let round = 0; round < 20; round += 1) {
      const pids = await members();
      if (pids.length === 0) return;
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone already
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  return {
    procs: procsFiles,
    limitsMemory: memoryDir !== undefined,
    oomKills: async () => {
      if (!memoryDir) return 0;
      const file = memoryDir.version === 2 ? 'memory.events' : 'memory.oom_control';
      const text = await fs.readFile(path.join(memoryDir.dir, file), 'utf8').catch(() => '');
      return Number(/^oom_kill (\d+)/m.exec(text)?.[1] ?? 0);
    },
    kill,
    close: async () => {
      await kill();
      for (const dir of dirs.map((d) => d.dir)) {
        // The kernel reaps what was killed in a moment; a cgroup with members cannot be removed.
        for (let i = 0; i < 100; i += 1) {
          try {
            await fs.rmdir(dir);
            break;
          } catch {
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
        }
      }
    },
  };
}
