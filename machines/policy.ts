// The approval policy: which tool calls run on their own, which need a human, which are
// refused. Pure code — it runs inside workflows — so paths are normalized lexically
// (posix, workspace-relative) and shell commands are split by a small tokenizer here
// rather than by a library. The tools themselves enforce confinement on the real
// filesystem at the moment of use; this file decides only who has to say yes.
import picomatch from 'picomatch/posix';
import { z } from 'zod';
import { commandViews, opaqueProgram } from './command-line';
import { scriptHashesSchema } from './script-hashes';
import { agentMayRead, protectedDirOf, runsLaterReason } from './protected-paths';
import { NetworkHosts, narrowHosts, narrowLimits, SandboxLimitsInput } from './sandbox-grant';

// ---------------------------------------------------------------------------------
// Tool kinds

/** What a tool can do to the world; the modes are defined in these terms. */
export type ToolKind = 'read' | 'write' | 'execute' | 'interact' | 'mcp' | 'unknown';

/** The built-in tools and their kinds: the one table tool definitions also read. */
export const builtinToolKinds = {
  read_file: 'read',
  list_dir: 'read',
  glob: 'read',
  grep: 'read',
  write_file: 'write',
  edit_file: 'write',
  run_command: 'execute',
  ask_user: 'interact',
} as const satisfies Record<string, ToolKind>;

export type BuiltinToolName = keyof typeof builtinToolKinds;

export const MCP_TOOL_PREFIX = 'mcp__';

export function toolKind(tool: string): ToolKind {
  if (Object.hasOwn(builtinToolKinds, tool)) return builtinToolKinds[tool as BuiltinToolName];
  if (tool.startsWith(MCP_TOOL_PREFIX)) return 'mcp';
  return 'unknown';
}

// ---------------------------------------------------------------------------------
// Configuration

export const policyModes = ['read-only', 'ask', 'auto-edit', 'full-auto'] as const;
export const PolicyMode = z.enum(policyModes);
export type PolicyMode = z.infer<typeof PolicyMode>;

const RULE_SYNTAX = /^([A-Za-z0-9_*.-]+)(?:\((.*)\))?$/s;

/**
 * A rule as users write it: `Tool` or `Tool(pattern)`. The tool part may use `*`
 * (`mcp__github__*`). The pattern is a command prefix for `run_command`
 * (`npm test*`) and a workspace-relative glob for tools that take a path (`src/**`).
 */
export const PolicyRule = z
  .string()
  .trim()
  .min(1, 'a rule cannot be empty')
  .superRefine((rule, ctx) => {
    const match = RULE_SYNTAX.exec(rule);
    if (!match) {
      ctx.addIssue({
        code: 'custom',
        message: `rule ${JSON.stringify(rule)} is not of the form Tool or Tool(pattern), e.g. "run_command(npm test*)" or "write_file(src/**)"`,
      });
      return;
    }
    if (match[2] !== undefined && match[2].trim() === '') {
      ctx.addIssue({ code: 'custom', message: `rule ${JSON.stringify(rule)} has empty parentheses; drop them to match every call` });
    }
  });

export const HeadlessAsk = z.enum(['deny', 'allow']);

/**
 * How `run_command` is confined. `workspace-write`: the workspace is writable, system
 * directories are read-only, the rest of the host is not there, `.keel/` is read-only,
 * /tmp is private. `read-only`: the same with the workspace read-only too. `off`: no
 * sandbox at all — the command has every right of the worker's user.
 */
export const sandboxLevels = ['workspace-write', 'read-only', 'off'] as const;
export const SandboxLevel = z.enum(sandboxLevels);
export type SandboxLevel = z.infer<typeof SandboxLevel>;

/** Sandbox settings for the commands a rule matches, over the policy's own. */
export const SandboxRule = z
  .object({
    rule: PolicyRule,
    sandbox: SandboxLevel.optional(),
    network: z.boolean().optional(),
    /** The hosts this rule's network grant reaches (machines/sandbox-grant.ts). */
    hosts: NetworkHosts.optional(),
    limits: SandboxLimitsInput.optional(),
  })
  .strict();
export type SandboxRule = z.infer<typeof SandboxRule>;

export const PolicyConfig = z
  .object({
    mode: PolicyMode.default('ask'),
    allow: z.array(PolicyRule).default([]),
    ask: z.array(PolicyRule).default([]),
    deny: z.array(PolicyRule).default([]),
    /** What `ask` becomes when no human can answer. */
    headless: z.object({ ask: HeadlessAsk.default('deny') }).strict().default({ ask: 'deny' }),
    /** The sandbox of run_command; `off` must be written out, it is never a default. */
    sandbox: SandboxLevel.default('workspace-write'),
    /** Whether commands may reach the network. */
    network: z.boolean().default(false),
    /** Hosts a network grant reaches, through Keel's proxy; absent: any public host. */
    hosts: NetworkHosts.optional(),
    /** Resource limits of sandboxed commands over the defaults (activities/tools/limits.ts). */
    limits: SandboxLimitsInput.optional(),
    /** Per-command exceptions, first match wins: `{"rule": "run_command(npm install*)", "network": true}`. */
    sandboxRules: z.array(SandboxRule).default([]),
  })
  .strict();
export type PolicyConfig = z.infer<typeof PolicyConfig>;
export type PolicyConfigInput = z.input<typeof PolicyConfig>;

export const defaultPolicy: PolicyConfig = PolicyConfig.parse({});

/** The workspace's policy file: it may only narrow what a session or goal was started with (resolvePolicy). */
export const POLICY_FILE = '.keel/policy.json';

export type PolicyParse = { ok: true; policy: PolicyConfig } | { ok: false; error: string };

/** Validates a policy (parsed JSON from the file or session options) with errors a person can act on. */
export function parsePolicy(raw: unknown, source = 'policy'): PolicyParse {
  const result = PolicyConfig.safeParse(raw ?? {});
  if (result.success) return { ok: true, policy: result.data };
  const lines = result.error.issues.map((issue) => {
    const where = issue.path.length ? issue.path.join('.') : '(top level)';
    return `  ${where}: ${issue.message}`;
  });
  return { ok: false, error: `invalid ${source}:\n${lines.join('\n')}` };
}

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

// ---------------------------------------------------------------------------------
// Session approval scopes: "approve for the rest of the session", remembered as data.

export const ApprovalScope = z.enum(['once', 'session']);
export type ApprovalScope = z.infer<typeof ApprovalScope>;

/** One call exactly as the human saw it: the tool and its input in canonical JSON. */
export const ExactCall = z.object({ tool: z.string().min(1), input: z.string() }).strict();
export type ExactCall = z.infer<typeof ExactCall>;

const approvalMeta = {
  /** When it was granted (from the approving event; machines never read the clock). */
  grantedAt: z.string().optional(),
  grantedBy: z.string().optional(),
};

/**
 * What "approve for the rest of the session" remembers: by default the exact call the
 * human saw (the same tool with the same input runs again without asking); a rule
 * (`run_command(npm test*)`) only when the human wrote or accepted one.
 */
export const SessionApproval = z.union([
  // `scripts`: the workspace files the approved calls ran, by content hash; a call whose file changed is not covered.
  z.object({ call: ExactCall, ...approvalMeta, scripts: scriptHashesSchema.optional() }).strict(),
  z.object({ rule: PolicyRule, ...approvalMeta, scripts: scriptHashesSchema.optional() }).strict(),
]);
export type SessionApproval = z.infer<typeof SessionApproval>;

/** How an approval reads in results, events and prompts. */
export function describeApproval(approval: SessionApproval): string {
  return 'call' in approval ? `exactly ${approval.call.tool} ${approval.call.input}` : approval.rule;
}

export type ApprovalGrant = { ok: true; approval: SessionApproval; label: string } | { ok: false; code: 'invalid_rule' | 'rule_does_not_cover'; error: string };

/**
 * The session approval for one approved call: the exact call, or the rule the human
 * gave — which must be valid and must cover the call being approved (a rule that does
 * not is almost surely a typo, and would grant something the human did not look at).
 */
export function sessionApprovalFor(
  request: PolicyRequest,
  rule: string | undefined,
  meta: { grantedAt?: string; grantedBy?: string } = {},
): ApprovalGrant {
  if (rule === undefined) {
    const approval: SessionApproval = { call: { tool: request.tool, input: canonicalJson(request.input) }, ...meta };
    return { ok: true, approval, label: describeApproval(approval) };
  }
  const parsed = PolicyRule.safeParse(rule);
  if (!parsed.success) return { ok: false, code: 'invalid_rule', error: parsed.error.issues.map((issue) => issue.message).join('; ') };
  if (!ruleCovers(parsed.data, request)) {
    return { ok: false, code: 'rule_does_not_cover', error: `rule ${JSON.stringify(parsed.data)} does not cover the call being approved (${request.tool} ${canonicalJson(request.input)})` };
  }
  return { ok: true, approval: { rule: parsed.data, ...meta }, label: parsed.data };
}

/** Whether an allow-style rule covers a call (every part of a command). */
export function ruleCovers(rule: string, request: PolicyRequest): boolean {
  return firstMatch([rule], request, subjectOf(request), 'every') !== undefined;
}

/**
 * The rule a person is offered to remember instead of the exact call — the narrowest
 * that still reads as a rule: the whole command word for word (no trailing `*`), or
 * the exact path. They may edit it; undefined when no rule can say it (`a && b`).
 */
export function suggestedRuleFor(request: PolicyRequest): string | undefined {
  const subject = subjectOf(request);
  switch (subject.type) {
    case 'command': {
      if (subject.parts.filter((p) => !p.view).length !== 1 || !subject.parts[0] || subject.parts[0].unprovable) return undefined;
      const rule = `${request.tool}(${subject.parts[0].tokens.map(quoteForRule).join(' ')})`;
      return PolicyRule.safeParse(rule).success && ruleCovers(rule, request) ? rule : undefined;
    }
    case 'path':
      return subject.path.type === 'inside' ? `${request.tool}(${subject.path.path})` : undefined;
    case 'paths': {
      const only = subject.paths.length === 1 ? subject.paths[0] : undefined;
      return only?.type === 'inside' ? `${request.tool}(${only.path})` : undefined;
    }
    case 'none':
      return request.tool;
    default:
      return assertNever(subject);
  }
}

/**
 * What "for the session" remembered before approvals became exact: the first two words
 * of a command (`rm -rf*`), or the bare tool. Kept only so that histories recorded
 * before the change replay as they ran (workflows choose it behind a patch marker);
 * never used for a new approval.
 */
export function legacySessionRuleFor(request: PolicyRequest): string {
  const subject = subjectOf(request);
  switch (subject.type) {
    case 'command': {
      if (subject.parts.filter((p) => !p.view).length !== 1 || !subject.parts[0] || subject.parts[0].unprovable) return request.tool;
      return `${request.tool}(${subject.parts[0].tokens.slice(0, 2).map(quoteForRule).join(' ')}*)`;
    }
    case 'path':
      return subject.path.type === 'inside' ? `${request.tool}(${subject.path.path})` : request.tool;
    case 'paths':
    case 'none':
      return request.tool;
    default:
      return assertNever(subject);
  }
}

/** The patch marker under which workflows remember exact calls (see legacySessionRuleFor). */
export const EXACT_APPROVALS_PATCH = 'keel-exact-session-approvals';

export function rememberApproval(approvals: readonly SessionApproval[], approval: SessionApproval): SessionApproval[] {
  const label = describeApproval(approval);
  if (approvals.some((existing) => describeApproval(existing) === label)) return [...approvals];
  return [...approvals, approval];
}

/** JSON with object keys sorted: the same input always gives the same text. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value)) ?? 'null';
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (isRecord(value)) {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, sortKeys(value[key])]),
    );
  }
  return value;
}

// ---------------------------------------------------------------------------------
// Requests and verdicts

export interface PolicyRequest {
  tool: string;
  /** The model's input, as given (validated or not: the policy only reads it). */
  input: unknown;
  /**
   * The workspace root (absolute). MCP tools name files by absolute path; with the root
   * known, those inside become workspace paths the rules can judge. Without it, every
   * absolute path is outside.
   */
  workspace?: string;
}

/** Argument names of MCP tools that name files (`path`, `paths`, `source`, `destination`, …). */
const PATH_ARGUMENT = /^(path|paths|file|files|filename|filepath|file_path|dir|directory|dirpath|folder|source|destination|src|dest|target|root|cwd|uri)$/i;

/** The file names in an MCP tool's arguments, top level and one level into arrays. */
export function pathArgumentsOf(input: unknown): string[] {
  if (!isRecord(input)) return [];
  const found: string[] = [];
  for (const [key, value] of Object.entries(input)) {
    if (!PATH_ARGUMENT.test(key)) continue;
    if (typeof value === 'string') found.push(value);
    else if (Array.isArray(value)) for (const item of value) if (typeof item === 'string') found.push(item);
  }
  return found;
}

/** An MCP path argument as a workspace path: absolute inside the root, or relative to it. */
export function mcpWorkspacePath(raw: string, workspace: string | undefined): WorkspacePath {
  let text = raw.startsWith('file://') ? decodeURIComponentSafe(raw.slice('file://'.length)) : raw;
  if (text.startsWith('/')) {
    const root = workspace?.replace(/\/+$/, '');
    if (!root || !(text === root || text.startsWith(`${root}/`))) return { type: 'outside', raw };
    text = text === root ? '.' : text.slice(root.length + 1);
  }
  const normalized = normalizeWorkspacePath(text);
  return normalized.type === 'outside' ? { type: 'outside', raw } : normalized;
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

export interface PolicyContext {
  /** True when no human can answer (a headless run): `ask` turns into the headless setting. */
  headless?: boolean;
  /** Approvals granted "for the rest of the session". */
  approvals?: readonly SessionApproval[];
}

export type PolicyDecision = 'allow' | 'ask' | 'deny';

export interface PolicyVerdict {
  decision: PolicyDecision;
  reason: string;
  /** The rule that decided, e.g. `deny: run_command(rm *)` or `mode: ask`. */
  matchedRule?: string;
  /** For commands that may run: the sandbox they run in. */
  sandbox?: CommandSandbox;
}

/**
 * Decides one call. Order: deny rules → session approvals → ask rules → allow rules →
 * the mode's default. For shell commands every part (split on `&&`, `||`, `;`, `|`, `&`)
 * is judged on its own: any denied part denies, any asking part asks, and the command is
 * allowed by rules only when every part is.
 */
export function evaluatePolicy(policy: PolicyConfig, request: PolicyRequest, context: PolicyContext = {}): PolicyVerdict {
  return withSandbox(policy, request, withHeadless(policy, evaluateWithoutHeadless(policy, request, context.approvals ?? []), context));
}

function withHeadless(policy: PolicyConfig, verdict: PolicyVerdict, context: PolicyContext): PolicyVerdict {
  if (verdict.decision !== 'ask' || !context.headless) return verdict;
  if (policy.headless.ask === 'allow') {
    return { ...verdict, decision: 'allow', reason: `${verdict.reason}; allowed without a human because headless.ask is "allow"` };
  }
  return {
    ...verdict,
    decision: 'deny',
    reason: `${verdict.reason}; no human can answer in a headless run, so it is denied (set headless.ask to "allow" to change this)`,
  };
}

function withSandbox(policy: PolicyConfig, request: PolicyRequest, verdict: PolicyVerdict): PolicyVerdict {
  if (toolKind(request.tool) !== 'execute' || verdict.decision === 'deny') return verdict;
  const sandbox = sandboxFor(policy, request);
  return { ...verdict, sandbox, reason: `${verdict.reason} [${describeSandbox(sandbox)}]` };
}

function evaluateWithoutHeadless(
  policy: PolicyConfig,
  request: PolicyRequest,
  approvals: readonly SessionApproval[],
): PolicyVerdict {
  const kind = toolKind(request.tool);
  const subject = subjectOf(request);

  if (subject.type === 'path' && subject.path.type === 'outside') {
    return {
      decision: 'deny',
      reason: `${request.tool}: path ${JSON.stringify(subject.path.raw)} is outside the workspace`,
      matchedRule: 'workspace',
    };
  }
  if (subject.type === 'paths') {
    const outside = subject.paths.find((p) => p.type === 'outside');
    if (outside && outside.type === 'outside') {
      return { decision: 'deny', reason: `${request.tool}: path ${JSON.stringify(outside.raw)} is outside the workspace`, matchedRule: 'workspace' };
    }
  }
  const refusal = protectedRefusal(request.tool, kind, subject, request.input);
  if (refusal) return { decision: 'deny', reason: refusal, matchedRule: 'protected' };

  const deny = firstMatch(policy.deny, request, subject, 'any');
  if (deny) return { decision: 'deny', reason: `${request.tool} matches deny rule ${deny}`, matchedRule: `deny: ${deny}` };
  // A program computed when the command runs cannot be held to a rule that names programs.
  const opaque = subject.type === 'command' ? opaqueProgram(subject.parts) : undefined;
  const namingDeny = opaque === undefined ? undefined : programRules(policy.deny, request.tool)[0];
  if (opaque !== undefined && namingDeny !== undefined) {
    return {
      decision: 'deny',
      reason: `${request.tool}: which program \`${opaque}\` runs is only known when it runs, so deny rule ${namingDeny} cannot be checked against it; write the program's name out`,
      matchedRule: `deny: ${namingDeny}`,
    };
  }

  const exact = canonicalJson(request.input);
  const sameCall = approvals.find((approval) => 'call' in approval && approval.call.tool === request.tool && approval.call.input === exact);
  if (sameCall) {
    return {
      decision: 'allow',
      reason: `${request.tool} with exactly this input was approved for the rest of the session`,
      matchedRule: `session: ${describeApproval(sameCall)}`,
    };
  }
  const approved = firstMatch(
    approvals.flatMap((approval) => ('rule' in approval ? [approval.rule] : [])),
    request,
    subject,
    'every',
  );
  if (approved) {
    return {
      decision: 'allow',
      reason: `${request.tool} was approved for the rest of the session (${approved})`,
      matchedRule: `session: ${approved}`,
    };
  }

  // Files that run later outside the sandbox: a human looks at every write (only an
  // approval the human gave for this session, above, or a deny rule decides otherwise).
  const later = kind === 'write' && subject.type === 'path' && subject.path.type === 'inside' ? runsLaterReason(subject.path.path) : undefined;
  if (later) return { decision: 'ask', reason: `${request.tool}: WARNING ${later}; a human must approve`, matchedRule: 'protected: runs later' };

  const ask = firstMatch(policy.ask, request, subject, 'any');
  if (ask) return { decision: 'ask', reason: `${request.tool} matches ask rule ${ask}`, matchedRule: `ask: ${ask}` };
  const namingAsk = opaque === undefined ? undefined : programRules(policy.ask, request.tool)[0];
  if (opaque !== undefined && namingAsk !== undefined) {
    return { decision: 'ask', reason: `${request.tool}: which program \`${opaque}\` runs is only known when it runs, so ask rule ${namingAsk} cannot be checked against it`, matchedRule: `ask: ${namingAsk}` };
  }

  const allow = firstMatch(policy.allow, request, subject, 'every');
  if (allow) return { decision: 'allow', reason: `${request.tool} matches allow rule ${allow}`, matchedRule: `allow: ${allow}` };

  return modeDefault(policy.mode, kind, request.tool);
}

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

function modeDefault(mode: PolicyMode, kind: ToolKind, tool: string): PolicyVerdict {
  const matchedRule = `mode: ${mode}`;
  if (kind === 'interact') return { decision: 'allow', reason: `${tool} asks the human; it needs no approval`, matchedRule };
  if (kind === 'read') {
    return { decision: 'allow', reason: `${tool} only reads the workspace (mode ${mode})`, matchedRule };
  }
  switch (mode) {
    case 'read-only':
      return { decision: 'deny', reason: `mode read-only: ${describeKind(kind, tool)} is not allowed`, matchedRule };
    case 'ask':
      return { decision: 'ask', reason: `mode ask: ${describeKind(kind, tool)} needs approval`, matchedRule };
    case 'auto-edit':
      return kind === 'write'
        ? { decision: 'allow', reason: `mode auto-edit: ${tool} writes inside the workspace`, matchedRule }
        : { decision: 'ask', reason: `mode auto-edit: ${describeKind(kind, tool)} needs approval`, matchedRule };
    case 'full-auto':
      return { decision: 'allow', reason: `mode full-auto: ${tool} allowed (no deny rule matched)`, matchedRule };
    default:
      return assertNever(mode);
  }
}

function describeKind(kind: ToolKind, tool: string): string {
  switch (kind) {
    case 'read':
      return `reading (${tool})`;
    case 'write':
      return `writing files (${tool})`;
    case 'execute':
      return `running commands (${tool})`;
    case 'interact':
      return `asking the human (${tool})`;
    case 'mcp':
      return `the MCP tool ${tool}`;
    case 'unknown':
      return `the unknown tool ${tool}`;
    default:
      return assertNever(kind);
  }
}

// ---------------------------------------------------------------------------------
// Rule matching

interface ParsedRule {
  tool: string;
  pattern: string | undefined;
}

function parseRule(rule: string): ParsedRule {
  const match = RULE_SYNTAX.exec(rule.trim());
  // Rules are validated by the schema; an unparseable one can only come from a caller
  // that skipped it, and then it must match nothing rather than everything.
  if (!match) return { tool: '\u0000', pattern: undefined };
  return { tool: match[1] ?? '', pattern: match[2]?.trim() };
}

/**
 * `any`: the rule matches if it matches any part of a command (deny, ask).
 * `every`: every part of a command must be matched by some rule in the list (allow).
 */
/** Rules for this tool that name a command (a pattern): the ones an unreadable program defeats. */
function programRules(rules: readonly string[], tool: string): string[] {
  return rules.filter((rule) => {
    const parsed = parseRule(rule);
    return parsed.pattern !== undefined && wildcard(parsed.tool, tool);
  });
}

function firstMatch(rules: readonly string[], request: PolicyRequest, subject: Subject, mode: 'any' | 'every'): string | undefined {
  const candidates = rules.map((rule) => ({ rule, parsed: parseRule(rule) })).filter(({ parsed }) => wildcard(parsed.tool, request.tool));
  if (candidates.length === 0) return undefined;

  switch (subject.type) {
    case 'none':
    case 'path': {
      const hit = candidates.find(({ parsed }) => matchesNonCommand(parsed.pattern, subject));
      return hit?.rule;
    }
    case 'paths': {
      // Deny and ask: any file named matches; allow: every file named must match.
      const judge = (pattern: string | undefined) =>
        pattern === undefined ||
        (mode === 'any'
          ? subject.paths.some((p) => matchesNonCommand(pattern, { type: 'path', path: p }))
          : subject.paths.every((p) => matchesNonCommand(pattern, { type: 'path', path: p })));
      return candidates.find(({ parsed }) => judge(parsed.pattern))?.rule;
    }
    case 'command': {
      if (mode === 'any') {
        for (const part of subject.parts) {
          // Deny and ask rules also judge parts the tokenizer could not prove: a denied
          // command hidden in `$(…)` or after a redirect is still denied.
          const hit = candidates.find(({ parsed }) => parsed.pattern === undefined || tokensMatch(parsed.pattern, part.tokens));
          if (hit) return hit.rule;
        }
        return undefined;
      }
      // A bare tool rule (`run_command`) covers every command; patterns cover only the
      // parts they prove, and a part the tokenizer could not prove is never covered.
      const bare = candidates.find(({ parsed }) => parsed.pattern === undefined);
      if (bare) return bare.rule;
      if (subject.parts.length === 0) return undefined;
      const used: string[] = [];
      for (const part of subject.parts) {
        if (part.view) continue;
        if (part.unprovable) return undefined;
        const hit = candidates.find(({ parsed }) => parsed.pattern !== undefined && commandMatches(parsed.pattern, part));
        if (!hit) return undefined;
        if (!used.includes(hit.rule)) used.push(hit.rule);
      }
      return used.join(', ');
    }
    default:
      return assertNever(subject);
  }
}

function matchesNonCommand(pattern: string | undefined, subject: Subject): boolean {
  if (pattern === undefined) return true;
  if (subject.type !== 'path' || subject.path.type !== 'inside') return false;
  return pathGlobMatches(pattern, subject.path.path);
}

/** A workspace-relative glob; a pattern that itself points outside matches nothing. */
export function pathGlobMatches(pattern: string, relativePath: string): boolean {
  const normalizedPattern = normalizeGlob(pattern);
  if (normalizedPattern === undefined) return false;
  return picomatch.isMatch(relativePath, normalizedPattern, { dot: true });
}

function normalizeGlob(pattern: string): string | undefined {
  let p = pattern.trim();
  if (p.startsWith('/')) return undefined;
  while (p.startsWith('./')) p = p.slice(2);
  if (p === '' || p === '.') return '.';
  if (p.split('/').some((segment) => segment === '..')) return undefined;
  return p;
}

function wildcard(pattern: string, value: string): boolean {
  if (!pattern.includes('*')) return pattern === value;
  const source = pattern
    .split('*')
    .map((piece) => piece.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${source}$`, 's').test(value);
}

/**
 * Token-prefix matching: each pattern token matches the command token at the same
 * place (`*` inside a token matches any characters); a `*` at the end of the pattern
 * also lets any further tokens follow. `npm test*` matches `npm test`, `npm test -- -u`
 * and `npm test:unit`, but not `npm install`.
 */
export function commandMatches(pattern: string, part: CommandPart): boolean {
  // Allowing needs certainty; denying and asking do not (see firstMatch).
  if (part.unprovable) return false;
  return tokensMatch(pattern, part.tokens);
}

function tokensMatch(pattern: string, tokens: readonly string[]): boolean {
  const tokenized = tokenizeShell(pattern);
  if (tokenized.type === 'error') return false;
  const patternTokens = tokenized.tokens.filter((token): token is WordToken => token.type === 'word').map((token) => token.text);
  if (patternTokens.length === 0) return false;
  const last = patternTokens[patternTokens.length - 1] ?? '';
  const open = last.endsWith('*');
  if (last === '*') patternTokens.pop();
  if (patternTokens.length === 0) return true;
  if (tokens.length < patternTokens.length) return false;
  if (!open && tokens.length !== patternTokens.length) return false;
  return patternTokens.every((token, index) => wildcard(token, tokens[index] ?? ''));
}

// ---------------------------------------------------------------------------------
// Subjects: what in a call's input the rules look at.

export type WorkspacePath =
  | { type: 'inside'; path: string }
  | { type: 'outside'; raw: string };

export interface CommandPart {
  tokens: string[];
  /** Contains something the tokenizer cannot prove harmless: `$(...)`, backticks, a redirect to a file. */
  unprovable: boolean;
  /** What another part really runs (machines/command-line.ts): judged by deny and ask rules only. */
  view?: true;
}

type Subject =
  | { type: 'none' }
  | { type: 'path'; path: WorkspacePath }
  /** An MCP tool's file arguments (at least one). */
  | { type: 'paths'; paths: WorkspacePath[] }
  | { type: 'command'; parts: CommandPart[] };

/**
 * `.keel/` and `.git/` at any depth are never written by a tool (they grant or run things
 * later); `.keel/` is not read either, but for the workspace's own `.keel/artifacts/`.
 * A command may not start inside either. See machines/protected-paths.ts.
 */
function protectedRefusal(tool: string, kind: ToolKind, subject: Subject, input: unknown): string | undefined {
  const cwd = kind === 'execute' && isRecord(input) ? stringField(input, 'cwd') : undefined;
  const paths = subject.type === 'path' ? [subject.path] : subject.type === 'paths' ? subject.paths : cwd !== undefined ? [normalizeWorkspacePath(cwd)] : [];
  for (const p of paths) {
    if (p.type !== 'inside') continue;
    const dir = protectedDirOf(p.path);
    if (!dir) continue;
    const why = dir === '.keel' ? "holds Keel's own state and policy (another session's too)" : 'holds git configuration and hooks that run on the next git command';
    if (kind === 'read') {
      if (agentMayRead(p.path)) continue;
      return `${tool}: ${p.path} is protected: ${dir}/ ${why}; the agent may not read it (only .keel/artifacts/ at the workspace root)`;
    }
    if (kind === 'execute') return `${tool}: a command may not run inside ${p.path}: ${dir}/ ${why}`;
    return `${tool}: ${p.path} is protected: ${dir}/ ${why}; the agent may not ${kind === 'mcp' ? 'name' : 'write'} it`;
  }
  return undefined;
}

function subjectOf(request: PolicyRequest): Subject {
  const input = isRecord(request.input) ? request.input : {};
  switch (request.tool) {
    case 'read_file':
    case 'write_file':
    case 'edit_file':
      return { type: 'path', path: normalizeWorkspacePath(stringField(input, 'path') ?? '') };
    case 'list_dir':
    case 'glob':
    case 'grep':
      return { type: 'path', path: normalizeWorkspacePath(stringField(input, 'path') ?? '.') };
    case 'run_command': {
      const cwd = normalizeWorkspacePath(stringField(input, 'cwd') ?? '.');
      if (cwd.type === 'outside') return { type: 'path', path: cwd };
      const parts = commandParts(input.command);
      return { type: 'command', parts: [...parts, ...parts.flatMap((part) => commandViews(part, splitShellCommand).map((v) => ({ ...v, view: true as const })))] };
    }
    default: {
      if (!request.tool.startsWith(MCP_TOOL_PREFIX)) return { type: 'none' };
      const paths = pathArgumentsOf(input).map((raw) => mcpWorkspacePath(raw, request.workspace));
      return paths.length ? { type: 'paths', paths } : { type: 'none' };
    }
  }
}

/** Every simple command a run_command input runs: its parts, and what wrappers and `sh -c` inside them run. */
export function commandPartsOf(command: unknown): CommandPart[] {
  const parts = commandParts(command);
  return [...parts, ...parts.flatMap((part) => commandViews(part, splitShellCommand))];
}

function commandParts(command: unknown): CommandPart[] {
  if (Array.isArray(command)) {
    const tokens = command.filter((token): token is string => typeof token === 'string');
    // argv goes to execve directly: no shell, so no operators to split on.
    return [{ tokens, unprovable: tokens.length !== command.length || tokens.length === 0 }];
  }
  if (typeof command !== 'string') return [{ tokens: [], unprovable: true }];
  return splitShellCommand(command);
}

/**
 * Normalizes a path the model gave, lexically and posix-style, relative to the
 * workspace root. Absolute paths and paths that climb out with `..` are `outside`.
 */
export function normalizeWorkspacePath(raw: string): WorkspacePath {
  if (raw.startsWith('/') || raw.startsWith('~') || raw.includes('\u0000')) return { type: 'outside', raw };
  const segments: string[] = [];
  for (const segment of raw.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') {
      if (segments.length === 0) return { type: 'outside', raw };
      segments.pop();
      continue;
    }
    segments.push(segment);
  }
  return { type: 'inside', path: segments.length ? segments.join('/') : '.' };
}

// ---------------------------------------------------------------------------------
// A small POSIX-shell tokenizer, enough to split a command line into its simple
// commands and their words. It does not expand anything; what it cannot read with
// certainty marks the part unprovable, so no allow rule can cover it.

interface WordToken {
  type: 'word';
  text: string;
  /** Held an unquoted or double-quoted `$(`, `` ` `` or `<(`/`>(`. */
  substitution: boolean;
}
type ShellToken = WordToken | { type: 'operator'; op: string } | { type: 'redirect'; op: string };

type Tokenized = { type: 'ok'; tokens: ShellToken[] } | { type: 'error'; message: string };

const SEPARATORS = ['&&', '||', ';;', ';', '|&', '|', '&', '\n'];

export function tokenizeShell(input: string): Tokenized {
  const tokens: ShellToken[] = [];
  let word = '';
  let inWord = false;
  let substitution = false;
  const flush = () => {
    if (inWord) tokens.push({ type: 'word', text: word, substitution });
    word = '';
    inWord = false;
    substitution = false;
  };

  let i = 0;
  while (i < input.length) {
    const c = input[i] ?? '';
    if (c === '\\') {
      if (input[i + 1] === '\n') {
        i += 2;
        continue;
      }
      if (i + 1 >= input.length) return { type: 'error', message: 'trailing backslash' };
      word += input[i + 1];
      inWord = true;
      i += 2;
      continue;
    }
    if (c === "'") {
      const end = input.indexOf("'", i + 1);
      if (end < 0) return { type: 'error', message: 'unterminated single quote' };
      word += input.slice(i + 1, end);
      inWord = true;
      i = end + 1;
      continue;
    }
    if (c === '"') {
      i += 1;
      inWord = true;
      let closed = false;
      while (i < input.length) {
        const d = input[i] ?? '';
        if (d === '"') {
          closed = true;
          i += 1;
          break;
        }
        if (d === '\\' && i + 1 < input.length && '$`"\\\n'.includes(input[i + 1] ?? '')) {
          word += input[i + 1];
          i += 2;
          continue;
        }
        if (d === '`' || (d === '$' && input[i + 1] === '(')) substitution = true;
        word += d;
        i += 1;
      }
      if (!closed) return { type: 'error', message: 'unterminated double quote' };
      continue;
    }
    if (c === '`') {
      // A backquoted command spans spaces: keep it whole so it can be judged on its own.
      const end = input.indexOf('`', i + 1);
      if (end < 0) return { type: 'error', message: 'unterminated backquote' };
      substitution = true;
      word += input.slice(i, end + 1);
      inWord = true;
      i = end + 1;
      continue;
    }
    if ((c === '$' && input[i + 1] === '(') || ((c === '<' || c === '>') && input[i + 1] === '(')) {
      substitution = true;
      word += c;
      inWord = true;
      i += 1;
      continue;
    }
    if (c === '#' && !inWord) {
      const end = input.indexOf('\n', i);
      i = end < 0 ? input.length : end;
      continue;
    }
    if (c === ' ' || c === '\t') {
      flush();
      i += 1;
      continue;
    }
    const separator = SEPARATORS.find((op) => input.startsWith(op, i));
    if (separator) {
      flush();
      tokens.push({ type: 'operator', op: separator });
      i += separator.length;
      continue;
    }
    if (c === '<' || c === '>') {
      // A word made only of digits right before a redirect is its file descriptor (`2>&1`).
      const fd = inWord && /^\d+$/.test(word) && !substitution ? word : '';
      if (fd) {
        word = '';
        inWord = false;
      } else {
        flush();
      }
      let op = c;
      const next = input[i + 1];
      if (next === c || next === '&' || (c === '>' && next === '|') || (c === '<' && next === '>')) op += next;
      tokens.push({ type: 'redirect', op: fd + op });
      i += op.length;
      continue;
    }
    if (c === '(' || c === ')' || c === '{' || c === '}') {
      // Subshells and groups: treated as separators, and the part is marked unprovable
      // by the splitter because it cannot see what they wrap with certainty.
      flush();
      tokens.push({ type: 'operator', op: c });
      i += 1;
      continue;
    }
    word += c;
    inWord = true;
    i += 1;
  }
  flush();
  return { type: 'ok', tokens };
}

/** Splits a shell command on `&&`, `||`, `;`, `|`, `&` and newlines into simple commands. */
export function splitShellCommand(command: string): CommandPart[] {
  const tokenized = tokenizeShell(command);
  if (tokenized.type === 'error') return [{ tokens: [command], unprovable: true }];
  const parts: CommandPart[] = [];
  const nested: string[] = [];
  let current: CommandPart = { tokens: [], unprovable: false };
  const push = () => {
    if (current.tokens.length > 0 || current.unprovable) parts.push(current);
    current = { tokens: [], unprovable: false };
  };
  const tokens = tokenized.tokens;
  for (let index = 0; index < tokens.length; index += 1) {
    const token = tokens[index];
    if (!token) continue;
    switch (token.type) {
      case 'word':
        current.tokens.push(token.text);
        if (token.substitution) {
          current.unprovable = true;
          nested.push(...substitutionsIn(token.text));
        }
        break;
      case 'operator':
        if (token.op === '(' || token.op === ')' || token.op === '{' || token.op === '}') current.unprovable = true;
        push();
        if (token.op === '(' || token.op === '{') current.unprovable = true;
        break;
      case 'redirect': {
        const target = tokens[index + 1];
        // Duplicating a descriptor (`2>&1`) or discarding output is harmless; any other
        // redirect reads or writes a file the rules did not look at.
        const harmless =
          (token.op.endsWith('&') && target?.type === 'word' && /^(\d+|-)$/.test(target.text)) ||
          (target?.type === 'word' && target.text === '/dev/null' && !target.substitution);
        if (!harmless) current.unprovable = true;
        if (target?.type === 'word') index += 1;
        break;
      }
      default:
        assertNever(token);
    }
  }
  push();
  // Commands inside `$(…)` and backticks of a word run too: judge them as parts of their own.
  for (const inner of nested) {
    for (const part of splitShellCommand(inner)) parts.push({ ...part, unprovable: true });
  }
  return parts;
}

function substitutionsIn(word: string): string[] {
  const found: string[] = [];
  for (const match of word.matchAll(/\$\(([^]*)\)|`([^`]*)`/g)) {
    const inner = match[1] ?? match[2];
    if (inner) found.push(inner);
  }
  return found;
}

function quoteForRule(token: string): string {
  return /^[A-Za-z0-9_./:=@%+,-]+$/.test(token) ? token : `'${token.replace(/'/g, `'\\''`)}'`;
}

// ---------------------------------------------------------------------------------

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function stringField(record: Record<string, unknown>, key: string): string | undefined {
  const value = record[key];
  return typeof value === 'string' ? value : undefined;
}

function assertNever(value: never): never {
  throw new Error(`unexpected value ${JSON.stringify(value)}`);
}
