// "Approve for the rest of the session", remembered as data: the exact call, or a rule the human
// gave that covers it.
import { z } from 'zod';
import { scriptHashesSchema } from '../script-hashes';
import { PolicyRule } from './config';
import type { PolicyRequest } from './evaluate';
import { ruleCovers } from './matching';
import { isRecord } from './util';
import { lazySchema } from '../lazy-schema';

export const ApprovalScope = lazySchema(() => z.enum(['once', 'session']));
export type ApprovalScope = z.infer<typeof ApprovalScope>;

/** One call exactly as the human saw it: the tool and its input in canonical JSON. */
export const ExactCall = lazySchema(() => z.object({ tool: z.string().min(1), input: z.string() }).strict());
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
export const SessionApproval = lazySchema(() => z.union([
  // `scripts`: the workspace files the approved calls ran, by content hash; a call whose file changed is not covered.
  z.object({ call: ExactCall, ...approvalMeta, scripts: scriptHashesSchema.optional() }).strict(),
  z.object({ rule: PolicyRule, ...approvalMeta, scripts: scriptHashesSchema.optional() }).strict(),
]));
export type SessionApproval = z.infer<typeof SessionApproval>;

/** How an approval reads in results, events and prompts. */
export function describeApproval(approval: SessionApproval): string {
  return 'call' in approval ? `exactly ${approval.call.tool} ${approval.call.input}` : approval.rule;
}

/**
 * Whether two approvals are the same grant: the same exact call, or the same rule. Compared
 * as data, never by how they read (describeApproval is for display).
 */
export function sameApproval(a: SessionApproval, b: SessionApproval): boolean {
  if ('call' in a) return 'call' in b && a.call.tool === b.call.tool && a.call.input === b.call.input;
  return 'rule' in b && a.rule === b.rule;
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
