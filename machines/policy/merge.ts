// Merging the workspace's policy file into the policy a session or goal was started with: the file
// may only narrow it.
import { type z } from 'zod';
import { narrowHosts, narrowLimits } from '../sandbox-grant';
import { type HeadlessAsk, POLICY_FILE, PolicyConfig, type PolicyConfigInput, type PolicyMode, type SandboxLevel, type SandboxRule } from './config';

/** Where one part of the effective policy came from. */
export type PolicySource = 'start' | 'default' | 'file';

/**
 * Where the effective policy came from: what the session or goal was started with (or
 * the defaults, when it named nothing) is the upper bound; the workspace's policy file
 * may only narrow it. Shown by the `state` query, `keel status` and the API.
 */
export interface PolicyOrigin {
  /** The policy file read, or null when there was none. */
  file: string | null;
  /** The bound: the start options' mode, sandbox, network and headless.ask, or the defaults. */
  bound: { mode: PolicyMode; sandbox: SandboxLevel; network: boolean; headlessAsk: z.infer<typeof HeadlessAsk> };
  mode: PolicySource;
  sandbox: PolicySource;
  network: PolicySource;
  headless: PolicySource;
  /** The file's rules that apply (they can only ask or deny more). */
  fromFile: { ask: string[]; deny: string[]; sandboxRules: string[] };
  /** What the file asked for and did not get, because it would widen the bound. */
  ignored: string[];
}

export interface ResolvedPolicy {
  policy: PolicyConfig;
  origin: PolicyOrigin;
}

const MODE_RANK: Record<PolicyMode, number> = { 'read-only': 0, ask: 1, 'auto-edit': 2, 'full-auto': 3 };
/** Higher is stricter. */
const SANDBOX_RANK: Record<SandboxLevel, number> = { off: 0, 'workspace-write': 1, 'read-only': 2 };

/**
 * The effective policy. The human's choice wins: the mode, sandbox, network and
 * headless.ask of the start options (defaults when absent: ask, workspace-write, no
 * network, deny) are an upper bound. A workspace file — which an agent or a cloned
 * repository may have written — may only narrow: a stricter mode or sandbox, no network,
 * more ask and deny rules, sandbox rules that are stricter than the bound. Its allow rules,
 * and anything else that would widen, are ignored and listed. Both inputs must have
 * passed parsePolicy.
 */
export function resolvePolicy(file: PolicyConfigInput | null, options: PolicyConfigInput | undefined, fileName: string | null = file ? POLICY_FILE : null): ResolvedPolicy {
  const start = PolicyConfig.parse(options ?? {});
  const f = file ?? {};
  const part = (given: unknown): PolicySource => (given === undefined ? 'default' : 'start');
  const origin: PolicyOrigin = {
    file: fileName,
    bound: { mode: start.mode, sandbox: start.sandbox, network: start.network, headlessAsk: start.headless.ask },
    mode: part(options?.mode),
    sandbox: part(options?.sandbox),
    network: part(options?.network),
    headless: part(options?.headless),
    fromFile: { ask: [], deny: [], sandboxRules: [] },
    ignored: [],
  };
  const policy: PolicyConfig = { ...start, allow: [...start.allow], ask: [...start.ask], deny: [...start.deny], sandboxRules: [...start.sandboxRules] };

  if (f.mode !== undefined) {
    if (MODE_RANK[f.mode] < MODE_RANK[policy.mode]) [policy.mode, origin.mode] = [f.mode, 'file'];
    else if (f.mode !== policy.mode) origin.ignored.push(`mode ${f.mode} (above ${policy.mode})`);
  }
  if (f.sandbox !== undefined) {
    if (SANDBOX_RANK[f.sandbox] > SANDBOX_RANK[policy.sandbox]) [policy.sandbox, origin.sandbox] = [f.sandbox, 'file'];
    else if (f.sandbox !== policy.sandbox) origin.ignored.push(`sandbox ${f.sandbox} (looser than ${policy.sandbox})`);
  }
  if (f.network !== undefined) {
    if (!f.network && policy.network) [policy.network, origin.network] = [false, 'file'];
    else if (f.network && !policy.network) origin.ignored.push('network true (the start options did not grant the network)');
  }
  const fileAsk = f.headless?.ask;
  if (fileAsk !== undefined) {
    if (fileAsk === 'deny' && policy.headless.ask === 'allow') [policy.headless, origin.headless] = [{ ask: 'deny' }, 'file'];
    else if (fileAsk === 'allow' && policy.headless.ask === 'deny') origin.ignored.push('headless.ask allow');
  }
  // Hosts and limits of the start options are the bound too: the file may only name fewer hosts and lower limits.
  const hosts = narrowHosts(start.hosts, f.hosts);
  const limits = narrowLimits(start.limits, f.limits);
  origin.ignored.push(...hosts.ignored, ...limits.ignored);
  if (hosts.hosts) policy.hosts = hosts.hosts;
  else delete policy.hosts;
  if (limits.limits) policy.limits = limits.limits;
  else delete policy.limits;
  for (const rule of f.allow ?? []) origin.ignored.push(`allow ${rule} (a file may not allow; give it in the start options)`);
  for (const rule of f.ask ?? []) {
    policy.ask.push(rule);
    origin.fromFile.ask.push(rule);
  }
  for (const rule of f.deny ?? []) {
    policy.deny.push(rule);
    origin.fromFile.deny.push(rule);
  }
  // Sandbox rules: the session's are more specific and tried first; the file's may only
  // make the commands they match stricter than the bound.
  for (const entry of f.sandboxRules ?? []) {
    const looser = (entry.sandbox !== undefined && SANDBOX_RANK[entry.sandbox] < SANDBOX_RANK[start.sandbox]) || (entry.network === true && !start.network);
    if (looser) origin.ignored.push(`sandboxRules ${entry.rule} (looser than the start options)`);
    else {
      // A rule's own hosts and limits are held to the start options' too.
      const ruleHosts = entry.hosts ? narrowHosts(start.hosts, entry.hosts) : null;
      const ruleLimits = entry.limits ? narrowLimits(start.limits, entry.limits) : null;
      for (const why of [...(ruleHosts?.ignored ?? []), ...(ruleLimits?.ignored ?? [])]) origin.ignored.push(`sandboxRules ${entry.rule}: ${why}`);
      const narrowed: SandboxRule = { ...entry };
      if (ruleHosts) narrowed.hosts = ruleHosts.hosts ?? [];
      if (ruleLimits) {
        if (ruleLimits.limits) narrowed.limits = ruleLimits.limits;
        else delete narrowed.limits;
      }
      policy.sandboxRules.push(narrowed);
      origin.fromFile.sandboxRules.push(entry.rule);
    }
  }
  return { policy, origin };
}

/** The effective policy of resolvePolicy, without its origin. */
export function mergePolicies(file: PolicyConfigInput | null, options: PolicyConfigInput | undefined): PolicyConfig {
  return resolvePolicy(file, options).policy;
}
