// Resource limits of one sandboxed call: set with prlimit(1) inside the sandbox, after the
// self-check and just before the command runs, so the command and everything it starts
// inherit them; /tmp is a tmpfs of a fixed size. Defaults suit a build or a test run; a
// policy may raise or lower each one (`"limits": {…}` on the policy or a sandbox rule).
//
// Memory is RLIMIT_DATA (the heap and every private writable mapping), not RLIMIT_AS: V8 and
// WebAssembly reserve many GiB of address space they never use (node's own fetch needs a
// WebAssembly instance), so an address-space limit low enough to matter breaks node.
//
// How a hit is recognised afterwards: CPU time and file size end the process with their
// own signals (SIGXCPU, SIGXFSZ), which bubblewrap passes on as 128 + signal; memory,
// process count and /tmp space make a system call fail (ENOMEM, EAGAIN, ENOSPC), which the
// command reports in its output in the C library's words.
import { DEFAULT_SANDBOX_LIMITS, type SandboxLimitsInput } from '../../machines/sandbox-grant';

export interface SandboxLimits {
  memoryBytes: number;
  processes: number;
  cpuSeconds: number;
  fileBytes: number;
  tmpBytes: number;
  openFiles: number;
  /** How much one command may grow the workspace (command-watch.ts). */
  diskBytes: number;
  /** Whether memoryBytes holds for the command tree together (a memory cgroup or the watcher), set by run_command. */
  treeMemory?: boolean;
}

const MiB = 1024 * 1024;
export const DEFAULT_LIMITS: SandboxLimits = {
  memoryBytes: DEFAULT_SANDBOX_LIMITS.memoryMiB * MiB,
  processes: DEFAULT_SANDBOX_LIMITS.processes,
  cpuSeconds: DEFAULT_SANDBOX_LIMITS.cpuSeconds,
  fileBytes: DEFAULT_SANDBOX_LIMITS.fileMiB * MiB,
  tmpBytes: DEFAULT_SANDBOX_LIMITS.tmpMiB * MiB,
  openFiles: DEFAULT_SANDBOX_LIMITS.openFiles,
  diskBytes: DEFAULT_SANDBOX_LIMITS.diskMiB * MiB,
};

/** The defaults with a policy's overrides laid over them. */
export function resolveLimits(input?: SandboxLimitsInput): SandboxLimits {
  return {
    memoryBytes: input?.memoryMiB !== undefined ? input.memoryMiB * MiB : DEFAULT_LIMITS.memoryBytes,
    processes: input?.processes ?? DEFAULT_LIMITS.processes,
    cpuSeconds: input?.cpuSeconds ?? DEFAULT_LIMITS.cpuSeconds,
    fileBytes: input?.fileMiB !== undefined ? input.fileMiB * MiB : DEFAULT_LIMITS.fileBytes,
    tmpBytes: input?.tmpMiB !== undefined ? input.tmpMiB * MiB : DEFAULT_LIMITS.tmpBytes,
    openFiles: input?.openFiles ?? DEFAULT_LIMITS.openFiles,
    diskBytes: input?.diskMiB !== undefined ? input.diskMiB * MiB : DEFAULT_LIMITS.diskBytes,
  };
}

/**
 * prlimit(1) options. Hard limits the command cannot raise; CPU time has its hard limit a
 * second above the soft one, so that the soft limit's SIGXCPU (which says why) comes first.
 */
export function limitArgs(limits: SandboxLimits): string[] {
  return [`--data=${limits.memoryBytes}`, `--nproc=${limits.processes}`, `--cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 1}`, `--fsize=${limits.fileBytes}`, `--nofile=${limits.openFiles}`];
}

export type { LimitKind } from '../../machines/tool-result';
import type { LimitKind } from '../../machines/tool-result';

export interface LimitHit {
  kind: LimitKind;
  /** One line for the model and the user: which limit, at what value. */
  message: string;
}

const SIGXCPU = 24;
const SIGXFSZ = 25;

/** The limit the call ran into, if its ending and output show one. */
export function limitHit(limits: SandboxLimits, ending: { code: number | null; signal: NodeJS.Signals | null }, output: string): LimitHit | undefined {
  if (ending.signal === 'SIGXCPU' || ending.code === 128 + SIGXCPU) return hit(limits, 'cpu');
  if (ending.signal === 'SIGXFSZ' || ending.code === 128 + SIGXFSZ) return hit(limits, 'file-size');
  if (ending.code === 0 && ending.signal === null) return undefined;
  return limitInOutput(limits, output);
}

/** A limit named by what a failed system call printed; also used to stop a fork bomb early. */
export function limitInOutput(limits: SandboxLimits, output: string): LimitHit | undefined {
  if (/fork: (retry: )?Resource temporarily unavailable|Cannot fork|can't fork|fork failed|EAGAIN: resource temporarily unavailable, (uv_)?(spawn|thread)/i.test(output)) return hit(limits, 'processes');
  if (/Cannot allocate memory|out of memory|\\bOOM\\b|std::bad_alloc|MemoryError|allocation failed|ENOMEM/i.test(output)) return hit(limits, 'memory');
  if (/File too large|EFBIG/.test(output)) return hit(limits, 'file-size');
  if (/No space left on device|ENOSPC/.test(output)) return hit(limits, 'tmp-space');
  if (/Too many open files|EMFILE/.test(output)) return hit(limits, 'open-files');
  return undefined;
}

export function hit(limits: SandboxLimits, kind: LimitKind): LimitHit {
  const mib = (bytes: number) => `${Math.round(bytes / MiB)} MiB`;
  switch (kind) {
    case 'memory':
      return { kind, message: limits.treeMemory ? `memory limit: ${mib(limits.memoryBytes)} for the command and every process it started, together` : `memory limit: ${mib(limits.memoryBytes)} of data memory per process` };
    case 'processes':
      return { kind, message: `process limit: ${limits.processes} processes` };
    case 'cpu':
      return { kind, message: `CPU time limit: ${limits.cpuSeconds} s per process` };
    case 'file-size':
      return { kind, message: `file size limit: ${mib(limits.fileBytes)} per file` };
    case 'open-files':
      return { kind, message: `open-files limit: ${limits.openFiles} descriptors per process` };
    case 'disk':
      return { kind, message: `disk budget: the command grew the workspace by more than ${mib(limits.diskBytes)}` };
    case 'tmp-space':
      return { kind, message: `disk space: the sandbox /tmp holds ${mib(limits.tmpBytes)}, or the workspace's disk is full` };
    default: {
      const never: never = kind;
      throw new Error(`unknown limit ${String(never)}`);
    }
  }
}
