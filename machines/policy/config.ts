// The policy as configured: modes, rules, headless and sandbox settings, validated with errors a
// person can act on.
import { z } from 'zod';
import { NetworkHosts, SandboxLimitsInput } from '../sandbox-grant';
import { lazySchema } from '../lazy-schema';

export const policyModes = ['read-only', 'ask', 'auto-edit', 'full-auto'] as const;
export const PolicyMode = lazySchema(() => z.enum(policyModes));
export type PolicyMode = z.infer<typeof PolicyMode>;

export const RULE_SYNTAX = /^([A-Za-z0-9_*.-]+)(?:\((.*)\))?$/s;

/**
 * A rule as users write it: `Tool` or `Tool(pattern)`. The tool part may use `*`
 * (`mcp__github__*`). The pattern is a command prefix for `run_command`
 * (`npm test*`) and a workspace-relative glob for tools that take a path (`src/**`).
 */
export const PolicyRule = lazySchema(() => z
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
  }));

export const HeadlessAsk = lazySchema(() => z.enum(['deny', 'allow']));

/**
 * How `run_command` is confined. `workspace-write`: the workspace is writable, system
 * directories are read-only, the rest of the host is not there, `.keel/` is read-only,
 * /tmp is private. `read-only`: the same with the workspace read-only too. `off`: no
 * sandbox at all — the command has every right of the worker's user.
 */
export const sandboxLevels = ['workspace-write', 'read-only', 'off'] as const;
export const SandboxLevel = lazySchema(() => z.enum(sandboxLevels));
export type SandboxLevel = z.infer<typeof SandboxLevel>;

/** Sandbox settings for the commands a rule matches, over the policy's own. */
export const SandboxRule = lazySchema(() => z
  .object({
    rule: PolicyRule,
    sandbox: SandboxLevel.optional(),
    network: z.boolean().optional(),
    /** The hosts this rule's network grant reaches (machines/sandbox-grant.ts). */
    hosts: NetworkHosts.optional(),
    limits: SandboxLimitsInput.optional(),
  })
  .strict());
export type SandboxRule = z.infer<typeof SandboxRule>;

export const PolicyConfig = lazySchema(() => z
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
  .strict());
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
