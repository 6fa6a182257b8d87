// When a sub-agent tells its parent what it is doing (signal `agentReport`, docs/sub-agents.md
// "What it costs"). Every report is a signal: two events and a workflow task in the child (the
// signal's send and its acknowledgement), one event and a workflow task in the parent. Sent on
// every change of usage — after each model call — it made a child's step cost three workflow
// tasks where a session's costs one. What the parent needs while the child runs:
// - its calls waiting for a human (the parent's inbox shows them): at once, on every change;
// - the commands it ran and files it wrote (the parent's stream shows them): no more often than
//   every EVIDENCE_EVERY_MS of workflow time, checked at each step; whatever is left comes with
//   the child's answer, whose evidence the parent shows too;
// - its spend: not while it runs (a child enforces its own share of the budget, and its result
//   carries its total); when it is cancelled, its last report says it (the parent counts it
//   after the call, as `session.usage_settled`).
// A goal's task agent reports as before: its goal enforces the tree's budget from the reports.
import type { Usage } from './budget';

/** The least time between two reports that carry only new commands or files. */
export const EVIDENCE_EVERY_MS = 5_000;

/** What a report says, reduced to what decides whether one is due. */
export interface ReportMark {
  /** The waiting calls' ids, in order. */
  approvals: string;
  /** The evidence's extent (commands run, files written). */
  evidence: string;
  usage: Usage;
}

export function reportMark(r: { pendingApprovals: readonly { callId: string }[]; evidence: { commands: readonly { command: string }[]; filesChanged: readonly string[] }; usage: Usage }): ReportMark {
  const { commands, filesChanged } = r.evidence;
  return {
    approvals: r.pendingApprovals.map((p) => p.callId).join('\n'),
    evidence: `${commands.length}:${filesChanged.length}:${commands.at(-1)?.command ?? ''}:${filesChanged.at(-1) ?? ''}`,
    usage: r.usage,
  };
}

const sameUsage = (a: Usage, b: Usage) => a.inputTokens === b.inputTokens && a.outputTokens === b.outputTokens && a.costUsd === b.costUsd;

/**
 * Whether a sub-agent sends a report now. `sent` is the last report's mark and when it went
 * (workflow time; the child's start before any). `final`: the child is ending cancelled, and
 * the parent learns its spend only from this report.
 */
export function subAgentReportDue(sent: { mark: ReportMark; atMs: number }, now: { mark: ReportMark; atMs: number }, final = false): boolean {
  if (now.mark.approvals !== sent.mark.approvals) return true;
  if (final) return now.mark.evidence !== sent.mark.evidence || !sameUsage(now.mark.usage, sent.mark.usage);
  return now.mark.evidence !== sent.mark.evidence && now.atMs - sent.atMs >= EVIDENCE_EVERY_MS;
}
