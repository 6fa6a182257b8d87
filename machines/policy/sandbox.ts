// The sandbox a command gets: the policy's level and network, narrowed by the sandbox rules that
// match it.
import { type SandboxLimitsInput } from '../sandbox-grant';
import { type PolicyConfig, type SandboxLevel } from './config';
import type { PolicyRequest } from './evaluate';
import { ruleCovers } from './matching';

export interface CommandSandbox {
  level: SandboxLevel;
  network: boolean;
  /** Hosts the network grant reaches; absent: any public host. */
  hosts?: string[];
  limits?: SandboxLimitsInput;
  /** The sandbox rule that set it, when one did. */
  matchedRule?: string;
}

/**
 * The sandbox a command runs in: the first sandbox rule that covers every part of it,
 * else the policy's own level and network. A policy carried over from before sandboxes
 * existed has neither field and gets the safe defaults.
 */
export function sandboxFor(policy: PolicyConfig, request: PolicyRequest): CommandSandbox {
  const grant = (hosts: string[] | undefined, limits: SandboxLimitsInput | undefined) => ({ ...(hosts ? { hosts } : {}), ...(limits ? { limits } : {}) });
  const base: CommandSandbox = { level: policy.sandbox ?? 'workspace-write', network: policy.network ?? false, ...grant(policy.hosts, policy.limits) };
  for (const entry of policy.sandboxRules ?? []) {
    if (!ruleCovers(entry.rule, request)) continue;
    const limits = entry.limits || policy.limits ? { ...policy.limits, ...entry.limits } : undefined;
    return { level: entry.sandbox ?? base.level, network: entry.network ?? base.network, ...grant(entry.hosts ?? policy.hosts, limits), matchedRule: entry.rule };
  }
  return base;
}

/** How a sandbox reads in a verdict, and so in every approval prompt and policy event. */
export function describeSandbox(sandbox: CommandSandbox): string {
  if (sandbox.level === 'off') return 'SANDBOX OFF: the command runs with every right of the worker\'s user, outside the workspace too';
  const network = !sandbox.network ? 'no network' : sandbox.hosts ? `network through Keel's proxy to ${sandbox.hosts.join(', ') || 'no host'}` : "network through Keel's proxy to public hosts";
  return `sandbox ${sandbox.level}, ${network}`;
}
