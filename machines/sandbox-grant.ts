// What a policy may grant a sandboxed command beyond the defaults, as data: the hosts its
// network grant reaches (through Keel's proxy; never a private or loopback address, see
// activities/tools/network-proxy.ts) and its resource limits (activities/tools/limits.ts).
import { z } from 'zod';
import { lazySchema } from './lazy-schema';

/** A host name, or `*.example.org` for the name and every name under it; no IP literals, ports or schemes. */
export const HostPattern = lazySchema(() => z
  .string()
  .min(1)
  .max(253)
  .regex(/^(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$/, 'a host name like "registry.npmjs.org" or "*.npmjs.org"'));

/** Host names the network grant reaches; absent means any public host. */
export const NetworkHosts = lazySchema(() => z.array(HostPattern).max(200));

export const SandboxLimitsInput = lazySchema(() => z
  .object({
    memoryMiB: z.number().int().min(64).max(1024 * 1024).optional().describe('Memory of the command and every process it starts, together (a cgroup), and data memory of each process, MiB.'),
    processes: z.number().int().min(8).max(100_000).optional().describe('Processes and threads of the sandbox user.'),
    cpuSeconds: z.number().int().min(1).max(86_400).optional().describe('CPU time of each process, seconds.'),
    fileMiB: z.number().int().min(1).max(1024 * 1024).optional().describe('Largest file a process may write, MiB.'),
    tmpMiB: z.number().int().min(1).max(1024 * 1024).optional().describe('Size of the sandbox /tmp (RAM-backed), MiB.'),
    openFiles: z.number().int().min(64).max(1024 * 1024).optional().describe('Open files (descriptors, sockets included) of each process.'),
    diskMiB: z.number().int().min(1).max(1024 * 1024 * 1024).optional().describe('How much one command may grow the workspace on disk, MiB.'),
  })
  .strict());
export type SandboxLimitsInput = z.infer<typeof SandboxLimitsInput>;

/** The limits a sandboxed call gets when no policy names them (activities/tools/limits.ts applies them). */
export const DEFAULT_SANDBOX_LIMITS: Required<SandboxLimitsInput> = { memoryMiB: 8192, processes: 1024, cpuSeconds: 900, fileMiB: 4096, tmpMiB: 512, openFiles: 4096, diskMiB: 4096 };

/**
 * A workspace file's limits under the start options' (or the defaults): each may only be
 * lowered. Returns the limits that apply and the names of those the file tried to raise.
 */
export function narrowLimits(bound: SandboxLimitsInput | undefined, file: SandboxLimitsInput | undefined): { limits: SandboxLimitsInput | undefined; ignored: string[] } {
  if (!file) return { limits: bound, ignored: [] };
  const limits: SandboxLimitsInput = { ...bound };
  const ignored: string[] = [];
  for (const key of Object.keys(file) as (keyof SandboxLimitsInput)[]) {
    const wanted = file[key];
    if (wanted === undefined) continue;
    const ceiling = bound?.[key] ?? DEFAULT_SANDBOX_LIMITS[key];
    if (wanted <= ceiling) limits[key] = wanted;
    else ignored.push(`limits.${key} ${wanted} (above ${ceiling})`);
  }
  return { limits: Object.keys(limits).length > 0 ? limits : undefined, ignored };
}

/**
 * A workspace file's host list under the start options': with no list in the start options
 * (any public host), the file's list narrows; with one, only the file's entries that the
 * start options' list already reaches are kept.
 */
export function narrowHosts(bound: readonly string[] | undefined, file: readonly string[] | undefined): { hosts: string[] | undefined; ignored: string[] } {
  if (!file) return { hosts: bound ? [...bound] : undefined, ignored: [] };
  if (!bound) return { hosts: [...file], ignored: [] };
  const hosts: string[] = [];
  const ignored: string[] = [];
  for (const pattern of file) {
    const covered = bound.includes(pattern) || (!pattern.startsWith('*.') && hostAllowed(bound, pattern));
    if (covered) hosts.push(pattern);
    else ignored.push(`hosts ${pattern} (not in the start options' list)`);
  }
  return { hosts, ignored };
}

/** Whether `host` (lower-cased, no trailing dot) is named by one of the patterns. */
export function hostAllowed(patterns: readonly string[] | undefined, host: string): boolean {
  if (patterns === undefined) return true;
  const name = host.toLowerCase().replace(/\.$/, '');
  return patterns.some((pattern) => {
    const p = pattern.toLowerCase();
    return p.startsWith('*.') ? name === p.slice(2) || name.endsWith(p.slice(1)) : name === p;
  });
}
