// What a policy may grant a sandboxed command beyond the defaults, as data: the hosts its
// network grant reaches (through Keel's proxy; never a private or loopback address, see
// activities/tools/network-proxy.ts) and its resource limits (activities/tools/limits.ts).
import { z } from 'zod';

/** A host name, or `*.example.org` for the name and every name under it; no IP literals, ports or schemes. */
export const HostPattern = z
  .string()
  .min(1)
  .max(253)
  .regex(/^(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$/, 'a host name like "registry.npmjs.org" or "*.npmjs.org"');

/** Host names the network grant reaches; absent means any public host. */
export const NetworkHosts = z.array(HostPattern).max(200);

export const SandboxLimitsInput = z
  .object({
    memoryMiB: z.number().int().min(64).max(1024 * 1024).optional().describe('Data memory (heap and private writable mappings) of each process, MiB.'),
    processes: z.number().int().min(8).max(100_000).optional().describe('Processes and threads of the sandbox user.'),
    cpuSeconds: z.number().int().min(1).max(86_400).optional().describe('CPU time of each process, seconds.'),
    fileMiB: z.number().int().min(1).max(1024 * 1024).optional().describe('Largest file a process may write, MiB.'),
    tmpMiB: z.number().int().min(1).max(1024 * 1024).optional().describe('Size of the sandbox /tmp (RAM-backed), MiB.'),
  })
  .strict();
export type SandboxLimitsInput = z.infer<typeof SandboxLimitsInput>;

/** Whether `host` (lower-cased, no trailing dot) is named by one of the patterns. */
export function hostAllowed(patterns: readonly string[] | undefined, host: string): boolean {
  if (patterns === undefined) return true;
  const name = host.toLowerCase().replace(/\.$/, '');
  return patterns.some((pattern) => {
    const p = pattern.toLowerCase();
    return p.startsWith('*.') ? name === p.slice(2) || name.endsWith(p.slice(1)) : name === p;
  });
}
