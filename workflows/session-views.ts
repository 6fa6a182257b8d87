// What people see of a session: its waiting approvals, the running turn, usage, the
// markdown details of the Temporal UI, and the queries that answer them (read only).
import { setHandler } from '@temporalio/workflow';
import { exhaustionOf as sessionExhaustion, type SessionState } from '../machines/session';
import type { TurnState } from '../machines/index';
import type { PolicyConfig, PolicyOrigin } from '../machines/policy';
import { eventsQuery, pendingApprovalsQuery, stateQuery, transcriptQuery, transcriptQuerySchema, usageQuery, type LogEntry, type PendingApproval, type StateView, type UsageView } from './definitions';
import { parsePayload as parse } from './payloads';
import { previewValue } from './preview';
import { code, escapeMarkdown } from './markdown';
import { transcriptPage } from './transcript';
import type { ConversationLog } from './runtime';
import type { TurnRunner, ToolEntry } from './turn-runner';
import type { FinishedTurns } from './finished-turns';
import type { ClientTools } from './client-tools';
import type { MachineHost } from './host';

export interface SessionViewHost {
  session: { readonly state: SessionState };
  turns: TurnRunner;
  finishedTurns: FinishedTurns;
  /** True while the machine's turn is held back for the next run. */
  deferred: () => boolean;
  /** What the session waits for while its store or workspace host is away, in words. */
  waiting: () => string | null;
  /** Its sub-agents' calls waiting for a human, shown as the session's (workflows/sub-agents.ts). */
  delegated?: () => PendingApproval[];
}

export interface SessionViews {
  pending: () => PendingApproval[];
  details: () => string;
  /** The running turn's state, when it is the session's turn (not one held for the next run). */
  current: () => TurnState | null;
  usageView: () => UsageView;
  waiting: () => string | null;
}

export function sessionViews({ session, turns, finishedTurns, deferred, waiting: infraWaiting, delegated }: SessionViewHost): SessionViews {
  function pending(): PendingApproval[] {
    const turnId = turns.turnId;
    if (turnId === null || session.state.turnId !== turnId || deferred()) return [];
    const own = turns.pendingApprovals().map((p) => ({ ...p, turnId }));
    return delegated === undefined ? own : [...own, ...delegated()];
  }
  function details(): string {
    const s = session.state;
    const lines = [
      `**${escapeMarkdown(s.status)}**${'reason' in s ? ` (${escapeMarkdown(s.reason)})` : ''} · ${s.turns} turns · ${s.queue.length} queued`,
      `usage: ${s.usage.inputTokens} in / ${s.usage.outputTokens} out tokens, $${s.usage.costUsd.toFixed(4)}`,
    ];
    const waiting = pending();
    if (waiting.length > 0) lines.push(`waiting for approval: ${waiting.map((p) => `${code(p.name)} (${code(p.callId)})`).join(', ')}`);
    if (s.question) lines.push(`question: ${escapeMarkdown(s.question.question)}`);
    const infra = infraWaiting();
    if (infra !== null) lines.push(escapeMarkdown(infra));
    return lines.join('\n\n');
  }
  const current = () => (turns.state && session.state.turnId === turns.turnId && !deferred() ? turns.state : null);
  const usageView = (): UsageView => ({
    usage: session.state.usage,
    limits: session.state.config.limits,
    turns: session.state.turns,
    toolCalls: session.state.toolCalls,
    // Suspended before a call that could cross a limit: the limit it hit, with what that call needed.
    exhaustion: sessionExhaustion(session.state) ?? (session.state.status === 'suspended' && session.state.reason === 'budget' ? session.state.exhaustion : null),
    turnUsage: current()?.usage ?? null,
    perTurn: finishedTurns.list().map((t) => ({ turnId: t.turnId, messageId: t.messageId, outcome: t.outcome, usage: t.usage })),
  });
  return { pending, details, current, usageView, waiting: infraWaiting };
}

export interface SessionQueryHost {
  sessionId: string;
  run: number;
  session: { readonly state: SessionState };
  host: MachineHost<LogEntry>;
  conversation: ConversationLog;
  clientTools: ClientTools;
  setup(): { tools: ToolEntry[]; policy: PolicyConfig | null; policyOrigin: PolicyOrigin | null };
}

export function sessionQueries(q: SessionQueryHost, { pending, current, usageView, waiting }: SessionViews): void {
  const { session, host } = q;
  setHandler(pendingApprovalsQuery, () => pending());
  setHandler(usageQuery, () => usageView());
  setHandler(transcriptQuery, (raw) => transcriptPage(q.conversation, host.stream, parse(transcriptQuerySchema, raw, 'transcript') ?? {}));
  setHandler(eventsQuery, (raw) => host.events(parse(transcriptQuerySchema, raw, 'events') ?? {}));
  setHandler(stateQuery, (): StateView => {
    const s = session.state;
    const turn = current();
    const { tools, policy, policyOrigin } = q.setup();
    return {
      sessionId: q.sessionId,
      status: s.status,
      // A setup that failed for good says why (what a human fixes before `restart`).
      reason: s.status === 'suspended' && s.reason === 'setup' ? `setup failed: ${s.error ?? 'unknown'}` : 'reason' in s ? s.reason : 'error' in s ? s.error : null,
      session: previewValue(s),
      turn: turn ? { turnId: turn.config.turnId, status: turn.status, step: turn.status === 'idle' ? null : turn.step } : null,
      queueLength: s.queue.length,
      pendingApprovals: pending(),
      question: s.question,
      ...(current() !== null && q.clientTools.calls().length > 0 ? { clientToolCalls: q.clientTools.calls() } : {}),
      usage: usageView(),
      run: q.run,
      nextEventSeq: host.seq,
      tools: tools.map((t) => t.spec.name),
      policy: policy && policyOrigin ? { effective: policy, origin: policyOrigin } : null,
      waiting: waiting(),
    };
  });
}
