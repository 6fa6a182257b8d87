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
   * The kind the tool's definition declares, for a tool the policy's own table does not know
   * (one defined with defineTool; `client` for a tool a client declared). Never overrides a
   * built-in tool's kind nor an MCP tool's (tool-kinds.ts).
   */
  kind?: ToolKind | undefined;
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

/**
 * What decided a call, as data: the runner acts on this (a call allowed by a remembered
 * approval runs bound to that approval's files), never on how the verdict reads.
 */
export type PolicyGrounds =
  /** A path outside the workspace. */
  | { type: 'workspace' }
  /** A protected path (.keel/, .git/): machines/protected-paths.ts. */
  | { type: 'protected' }
  /** A write to a file that runs later outside the sandbox: a human looks at it. */
  | { type: 'runs_later' }
  /** A rule of the policy's deny, ask or allow list. */
  | { type: 'rule'; list: 'deny' | 'ask' | 'allow'; rule: string }
  /** An approval a human gave for the rest of the session. */
  | { type: 'session_approval'; approval: SessionApproval }
  /** No rule matched: the mode's default for the tool's kind. */
  | { type: 'mode'; mode: PolicyMode };

interface VerdictCommon {
  reason: string;
  grounds: PolicyGrounds;
  /** How the grounds read, e.g. `deny: run_command(rm *)` or `mode: ask`: for display only (describeGrounds). */
  matchedRule: string;
}

export type PolicyVerdict =
  | (VerdictCommon & { decision: 'deny'; sandbox?: undefined })
  /** For a command that may run: the sandbox it runs in (absent for other kinds). */
  | (VerdictCommon & { decision: 'ask' | 'allow'; sandbox?: CommandSandbox });

/** How a verdict's grounds read in events, prompts and the CLI. Display only: nothing parses it. */
export function describeGrounds(grounds: PolicyGrounds): string {
  switch (grounds.type) {
    case 'workspace':
      return 'workspace';
    case 'protected':
      return 'protected';
    case 'runs_later':
      return 'protected: runs later';
    case 'rule':
      return `${grounds.list}: ${grounds.rule}`;
    case 'session_approval':
      return `session: ${describeApproval(grounds.approval)}`;
    case 'mode':
      return `mode: ${grounds.mode}`;
    default:
      return assertNever(grounds);
  }
}

/** The remembered approval an allowed call runs under (its run is bound to the files it names), or null. */
export function approvalOf(verdict: PolicyVerdict): SessionApproval | null {
  return verdict.decision === 'allow' && verdict.grounds.type === 'session_approval' ? verdict.grounds.approval : null;
}

function verdict(decision: PolicyDecision, reason: string, grounds: PolicyGrounds): PolicyVerdict {
  return { decision, reason, grounds, matchedRule: describeGrounds(grounds) };
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
    grounds: verdict.grounds,
    matchedRule: verdict.matchedRule,
    decision: 'deny',
    reason: `${verdict.reason}; no human can answer in a headless run, so it is denied (set headless.ask to "allow" to change this)`,
  };
}

function withSandbox(policy: PolicyConfig, request: PolicyRequest, verdict: PolicyVerdict): PolicyVerdict {
  if (toolKind(request.tool, request.kind) !== 'execute' || verdict.decision === 'deny') return verdict;
  const sandbox = sandboxFor(policy, request);
  return { ...verdict, sandbox, reason: `${verdict.reason} [${describeSandbox(sandbox)}]` };
}

function evaluateWithoutHeadless(
  policy: PolicyConfig,
  request: PolicyRequest,
  approvals: readonly SessionApproval[],
): PolicyVerdict {
  const kind = toolKind(request.tool, request.kind);
  const subject = subjectOf(request);

  if (subject.type === 'path' && subject.path.type === 'outside') {
    return verdict('deny', `${request.tool}: path ${JSON.stringify(subject.path.raw)} is outside the workspace`, { type: 'workspace' });
  }
  if (subject.type === 'paths') {
    const outside = subject.paths.find((p) => p.type === 'outside');
    if (outside && outside.type === 'outside') {
      return verdict('deny', `${request.tool}: path ${JSON.stringify(outside.raw)} is outside the workspace`, { type: 'workspace' });
    }
  }
  const refusal = protectedRefusal(request.tool, kind, subject, request.input);
  if (refusal) return verdict('deny', refusal, { type: 'protected' });

  const deny = firstMatch(policy.deny, request, subject, 'any');
  if (deny) return verdict('deny', `${request.tool} matches deny rule ${deny}`, { type: 'rule', list: 'deny', rule: deny });
  // A program computed when the command runs cannot be held to a rule that names programs.
  const opaque = subject.type === 'command' ? opaqueProgram(subject.parts) : undefined;
  const namingDeny = opaque === undefined ? undefined : programRules(policy.deny, request.tool)[0];
  if (opaque !== undefined && namingDeny !== undefined) {
    return verdict(
      'deny',
      `${request.tool}: which program \`${opaque}\` runs is only known when it runs, so deny rule ${namingDeny} cannot be checked against it; write the program's name out`,
      { type: 'rule', list: 'deny', rule: namingDeny },
    );
  }

  const exact = canonicalJson(request.input);
  const sameCall = approvals.find((approval) => 'call' in approval && approval.call.tool === request.tool && approval.call.input === exact);
  if (sameCall) {
    return verdict('allow', `${request.tool} with exactly this input was approved for the rest of the session`, { type: 'session_approval', approval: sameCall });
  }
  const byRule = approvals.flatMap((approval) => ('rule' in approval ? [approval] : []));
  const approved = firstMatch(
    byRule.map((approval) => approval.rule),
    request,
    subject,
    'every',
  );
  const approval = approved === undefined ? undefined : byRule.find((a) => a.rule === approved);
  if (approved !== undefined && approval !== undefined) {
    return verdict('allow', `${request.tool} was approved for the rest of the session (${approved})`, { type: 'session_approval', approval });
  }

  // Files that run later outside the sandbox: a human looks at every write (only an
  // approval the human gave for this session, above, or a deny rule decides otherwise).
  const later = kind === 'write' && subject.type === 'path' && subject.path.type === 'inside' ? runsLaterReason(subject.path.path) : undefined;
  if (later) return verdict('ask', `${request.tool}: WARNING ${later}; a human must approve`, { type: 'runs_later' });

  const ask = firstMatch(policy.ask, request, subject, 'any');
  if (ask) return verdict('ask', `${request.tool} matches ask rule ${ask}`, { type: 'rule', list: 'ask', rule: ask });
  const namingAsk = opaque === undefined ? undefined : programRules(policy.ask, request.tool)[0];
  if (opaque !== undefined && namingAsk !== undefined) {
    return verdict('ask', `${request.tool}: which program \`${opaque}\` runs is only known when it runs, so ask rule ${namingAsk} cannot be checked against it`, { type: 'rule', list: 'ask', rule: namingAsk });
  }

  const allow = firstMatch(policy.allow, request, subject, 'every');
  if (allow) return verdict('allow', `${request.tool} matches allow rule ${allow}`, { type: 'rule', list: 'allow', rule: allow });

  return modeDefault(policy.mode, kind, request.tool);
}

function modeDefault(mode: PolicyMode, kind: ToolKind, tool: string): PolicyVerdict {
  const grounds: PolicyGrounds = { type: 'mode', mode };
  if (kind === 'interact') return verdict('allow', `${tool} asks the human; it needs no approval`, grounds);
  // The client that declared it runs it, not the worker: allowed unless a rule says otherwise.
  if (kind === 'client') return verdict('allow', `${tool} is a client tool: the client that declared it runs it`, grounds);
  if (kind === 'read') {
    return verdict('allow', `${tool} only reads the workspace (mode ${mode})`, grounds);
  }
  switch (mode) {
    case 'read-only':
      return verdict('deny', `mode read-only: ${describeKind(kind, tool)} is not allowed`, grounds);
    case 'ask':
      return verdict('ask', `mode ask: ${describeKind(kind, tool)} needs approval`, grounds);
    case 'auto-edit':
      return kind === 'write'
        ? verdict('allow', `mode auto-edit: ${tool} writes inside the workspace`, grounds)
        : verdict('ask', `mode auto-edit: ${describeKind(kind, tool)} needs approval`, grounds);
    case 'full-auto':
      return verdict('allow', `mode full-auto: ${tool} allowed (no deny rule matched)`, grounds);
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
    case 'client':
      return `the client tool ${tool}`;
    case 'unknown':
      return `the unknown tool ${tool}`;
    default:
      return assertNever(kind);
  }
}
