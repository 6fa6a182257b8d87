// Evaluating a tool call against the policy: allow, ask or deny, with the reason and the sandbox
// its command gets.
import { runsLaterReason } from '../protected-paths';
import { opaqueProgram } from './command-views';
import { type PolicyConfig, type PolicyMode } from './config';
import { firstMatch, programRules } from './matching';
import { type CommandSandbox, describeSandbox, sandboxFor } from './sandbox';
import { canonicalJson, describeApproval, type SessionApproval } from './session-approval';
import { protectedRefusal, subjectOf } from './subjects';
import { toolKind, type ToolKind } from './tool-kinds';
import { assertNever } from './util';

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
