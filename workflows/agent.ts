// A task agent: the child workflow a goal starts for one attempt at one task
// (`<goalId>/task-<id>/<attempt>`). It runs one turn of the turn machine to completion with
// the shared turn runner — the same model calls, tools, policy and approvals as a session
// — and returns the outcome with its evidence. It tells its goal (signal `agentReport`)
// what it has spent and which tool calls wait for a human, so the goal can enforce its
// budget across the tree and answer approvals; `approve` / `deny` reach it from the goal.
import {
  CancellationScope,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { TurnResult, Usage } from '../machines/index';
import { addSettledUsage, ZERO_USAGE, type Exhaustion } from '../machines/budget';
import { approvalFrom, EXACT_APPROVALS_PATCH, rememberApproval, SessionApproval } from '../machines/policy';
import { agentReportSignal, approveSchema, denySchema, steerSchema, transcriptQuerySchema, type GoalLogEntry, type PendingApproval } from './definitions';
import {
  AGENT_SIGNALS,
  agentApproveSignal,
  agentDenySignal,
  agentSteerSignal,
  agentEventsQuery,
  agentInputSchema,
  agentPendingApprovalsQuery,
  type AgentInput,
  type AgentReport,
  type TaskEvidence,
} from './protocol/agent';
import { EMPTY_EVIDENCE, foldEvidence, type EvidenceState } from '../machines/evidence';
import { decideTaskOutcome, FINISH_TASK } from '../machines/task-outcome';
import { agentSearchStatus } from '../machines/search-status';
import { approverLabel, parsePayload, parseStartInput } from './payloads';
import { agentSystem, taskPrompt } from './planning';
import { ConversationLog } from './runtime';
import { MachineHost } from './host';
import { code, escapeMarkdown } from './markdown';
import { appendStreamTail } from './model-stream';
import { TurnRunner } from './turn-runner';
import { DEFAULT_WORKSPACE_HOST_WAIT_MS, WorkspaceRouting } from './workspace-host';
import { hostMoveHandler } from './host-move';
import { WaitingAttribute } from './waiting-attribute';
import { infraWaitingKey } from '../machines/infra-retry';
import { hasPatch, SUB_AGENT_QUIET_REPORTS_PATCH } from './run-format';
import { nestedSubAgents } from './nested-sub-agents';
import { subAgentReportSignal, subAgentSlotAnswerSignal } from './protocol/sub-agents';
import { checkpointAgentEnd } from './agent-checkpoint';
import type { AgentCheckpoint } from './protocol/agent';
import { reportMark, subAgentReportDue, type ReportMark } from '../machines/sub-agent-reports';

/** A task agent's turns read the retry table's unattended row (machines/model-retry.ts). */
const UNATTENDED_RETRIES_PATCH = 'agent-unattended-retries';

/** An agent's input with its one default filled in (the goal resolved the rest: workflows/goal-options.ts). */
export type ResolvedAgentInput = AgentInput & { workspaceHostWaitMs: number };

/** The one place an agent's defaults are applied: only the wait for a workspace host, which a goal names only with a host. Pure and idempotent. */
export function resolveAgentInput(input: AgentInput): ResolvedAgentInput {
  return { ...input, workspaceHostWaitMs: input.workspaceHostWaitMs ?? DEFAULT_WORKSPACE_HOST_WAIT_MS };
}

export interface AgentResult {
  agentId: string;
  taskId: string;
  attempt: number;
  outcome: 'succeeded' | 'failed';
  /** The agent's final answer, or why it failed. */
  summary: string;
  turnOutcome: TurnResult['outcome'];
  evidence: TaskEvidence;
  usage: Usage;
  steps: number;
  /** Set when the turn ended on a budget: which limit, and the figures against the agent's share of the goal's. */
  exhaustion?: Exhaustion;
  /** The workspace's checkpoint at its end (goals started with checkpoints: ./agent-checkpoint.ts). */
  checkpoint?: AgentCheckpoint;
}

export type { AgentInput } from './protocol/agent';

export async function agentWorkflow(raw: AgentInput): Promise<AgentResult> {
  parseStartInput(agentInputSchema, raw, 'agent');
  const input = resolveAgentInput(raw);
  const parent = workflowInfo().parent;
  // A sub-agent (an `agent` call's child, workflows/sub-agents.ts): its prompt and system are the
  // call's, a fork starts from its parent's conversation, and the parent's "always" holds.
  const delegation = input.delegation;
  const conversation = new ConversationLog(delegation?.fork !== undefined ? { head: delegation.fork.head, pending: [...delegation.fork.pending], total: 0, tail: [] } : undefined);
  let approvals: SessionApproval[] = parsePayload(SessionApproval.array(), delegation?.approvals ?? [], 'delegation.approvals');
  let result: TurnResult | null = null;
  // Evidence is folded from the tool events as they pass (machines/evidence.ts).
  let folded: EvidenceState = EMPTY_EVIDENCE;
  // What interrupted calls were billed for beyond what the turn counted (a call the goal's
  // cancel cut off reads on until its connection closes): the agent's, and so the goal's.
  let settled: Usage = ZERO_USAGE;
  const usageNow = (): Usage => {
    const u = turns.state?.usage ?? ZERO_USAGE;
    return settled === ZERO_USAGE ? u : { ...u, inputTokens: u.inputTokens + settled.inputTokens, outputTokens: u.outputTokens + settled.outputTokens, costUsd: u.costUsd + settled.costUsd };
  };

  const host: MachineHost<GoalLogEntry> = new MachineHost<GoalLogEntry>({
    kind: 'agent',
    workspace: input.workspace,
    idField: 'workflowId',
    signals: AGENT_SIGNALS,
    tap: (event) => {
      if (event.kind === 'tool.call' || event.kind === 'tool.result') folded = foldEvidence(folded, event);
    },
    view: () => {
      const usage = usageNow();
      const waiting = pending();
      const status = turns.state?.status ?? 'idle';
      const details =
        `**${escapeMarkdown(status)}** · task ${code(input.taskId)}, attempt ${input.attempt}\n\nusage: ${usage.inputTokens} in / ${usage.outputTokens} out tokens` +
        (waiting.length > 0 ? `\n\nwaiting for approval: ${waiting.map((p) => `${code(p.name)} (${code(p.callId)})`).join(', ')}` : '');
      return { details, status, searchStatus: turns.state ? agentSearchStatus(turns.state.status) : 'idle', pendingApprovals: waiting.length };
    },
    afterReport: () => reportToGoal(),
    live: () => (turns.state?.status === 'calling_llm' ? turns.modelCalls : []),
  });
  const agentId = host.workflowId;
  const { now, publish, rejected } = host;

  // The goal hands over the tools without ask_user: nobody talks to a task agent directly.
  const tools = input.tools;
  const routing = new WorkspaceRouting(workflowInfo().taskQueue, input.workspaceHost, input.workspaceHostWaitMs);
  // A sub-agent whose depth allows it delegates in turn (its tools then include `agent`).
  const subAgents = nestedSubAgents(input, agentId, {
    tools: () => tools,
    toolsRef: () => input.toolsRef,
    policy: () => ({ policy: input.policy, approvals }),
    turn: () => turns.state,
    conversation: () => conversation.checkpoint(),
    route: () => routing.route,
    emit: publish,
    settled: (_turnId, _callId, usage) => host.post(() => (settled = addSettledUsage(settled, usage))),
    changed: () => host.post(() => undefined),
  });
  hostMoveHandler({
    workspace: input.workspace,
    routing,
    post: host.post,
    publish: host.publish,
    // The agent's one turn hears it before its next model call.
    tellAgent: (notice) => void (turns.state !== null && turns.apply({ type: 'steer', text: notice })),
  });
  const turns: TurnRunner = new TurnRunner(
    {
      workspace: input.workspace,
      // Read at every call: an operator's host move sends the next one to the new host.
      get workspaceRoute() {
        return routing.route;
      },
      storeDir: input.storeDir,
      model: input.model,
      maxTokens: input.maxTokens,
      system: delegation !== undefined ? (delegation.system ?? undefined) : agentSystem(input.taskId, input.role),
      approvalTimeoutMs: input.approvalTimeoutMs,
      maxParallelTools: input.maxParallelTools,
      retryBackoffMs: input.retryBackoffMs,
      // Agents started before this read the session's row: their histories replay as recorded.
      unattended: () => hasPatch(UNATTENDED_RETRIES_PATCH),
      modelActivity: input.modelActivity,
      thinking: input.thinking,
      ...(input.promptCacheTtl !== undefined ? { promptCacheTtl: input.promptCacheTtl } : {}),
    },
    {
      queue: host.queue,
      timers: host.timers,
      conversation,
      now,
      stampAt: host.stampAt,
      tools: () => tools,
      toolsRef: () => input.toolsRef,
      storeId: () => input.storeId,
      policy: () => ({ policy: input.policy, approvals, headless: input.headless }),
      updateApprovals: (update) => (approvals = update(approvals)),
      emit: publish,
      rejected,
      streamTail: (tail) => appendStreamTail(host.stream, tail),
      streamedText: () => '',
      finished: (r) => {
        result = r;
      },
      asked: () => {},
      settled: (_turnId, _callId, usage) => host.post(() => (settled = addSettledUsage(settled, usage))),
      observer: host.observer('turn'),
      infraChanged: () => waitingAttribute.refresh(),
      ...(subAgents !== null ? { subAgents } : {}),
    },
  );
  // KeelWaiting: what the agent's turn waits out (a workspace host, the store).
  const waitingAttribute = new WaitingAttribute(() => infraWaitingKey(turns.infra.current));

  // ---- reporting to the goal ---------------------------------------------------------
  let reportKey = '';
  let sent: Promise<void> = Promise.resolve();
  // A sub-agent's parent hears of approvals at once, of commands and files now and then, of its
  // spend with its answer (or its last report when cancelled): machines/sub-agent-reports.ts.
  // Asked once, at the start: a child recorded before it reported every change of usage.
  const quietReports = delegation !== undefined && hasPatch(SUB_AGENT_QUIET_REPORTS_PATCH);
  let lastSent: { mark: ReportMark; atMs: number } = { mark: reportMark({ pendingApprovals: [], evidence: EMPTY_EVIDENCE.evidence, usage: ZERO_USAGE }), atMs: now() };
  // The answer carries everything: a quiet child sends nothing more once it has it.
  let answered = false;
  function pending(): PendingApproval[] {
    const turnId = turns.turnId;
    const own = turnId === null ? [] : turns.pendingApprovals().map((p) => ({ ...p, turnId }));
    return subAgents === null ? own : [...own, ...subAgents.pending()];
  }
  function reportToGoal(final = false): void {
    const usage = usageNow();
    const waiting = pending();
    if (quietReports) {
      if (answered || !parent) return;
      const mark = { mark: reportMark({ pendingApprovals: waiting, evidence: folded.evidence, usage }), atMs: now() };
      if (!subAgentReportDue(lastSent, mark, final)) return;
      lastSent = mark;
    } else {
      // Evidence rides along with the next change of usage or approvals (every tool result is
      // followed by a model call), so the number of reports stays what it was.
      const key = JSON.stringify([usage, waiting.map((p) => p.callId)]);
      if (key === reportKey || !parent) return;
      reportKey = key;
    }
    const payload: AgentReport = {
      agentId,
      taskId: input.taskId,
      attempt: input.attempt,
      token: input.reportToken ?? '',
      usage,
      pendingApprovals: waiting,
      evidence: folded.evidence,
    };
    const handle = getExternalWorkflowHandle(parent.workflowId);
    // In order, one at a time; a lost report costs nothing lasting, since usage is
    // cumulative and the result carries the total.
    sent = sent.then(() => handle.signal(agentReportSignal, payload)).catch(() => undefined);
  }

  // ---- approvals answered through the goal (or directly) ------------------------------
  const guard = (source: string, run: () => void) =>
    host.post(() => {
      try {
        run();
      } catch (error) {
        rejected(source, { code: 'guard_failed', machine: 'turn', state: turns.state?.status ?? 'none', event: source, message: (error as Error).message });
      }
    });
  setHandler(agentApproveSignal, (raw) =>
    guard('signal approve', () => {
      const a = parsePayload(approveSchema, raw, 'approve');
      // A call of its own sub-agent's: sent on down (the child decides).
      const owner = subAgents?.owner(a.callId) ?? null;
      if (owner !== null && subAgents !== null) {
        void subAgents.approve(owner, a).catch(() => undefined);
        return;
      }
      const approver = approverLabel(a);
      // The same decision the goal's validator made before forwarding (machines/approval.ts).
      const d = approvalFrom(a, pending(), approver);
      if (!d.ok) throw new Error(d.message);
      const r = turns.apply({ type: 'tool', callId: d.callId, event: { type: 'approved', approver, scope: d.scope } });
      if (!r.ok) return rejected('signal approve', r.error);
      if (d.remember !== null) {
        // Histories recorded before approvals were exact replay with the rule they remembered then.
        const legacy = d.legacyRule !== null && !hasPatch(EXACT_APPROVALS_PATCH) ? d.legacyRule : null;
        const approval = legacy !== null ? { rule: legacy, grantedBy: 'human' } : d.remember;
        approvals = rememberApproval(approvals, { ...approval, grantedAt: new Date(now()).toISOString() });
        turns.approvedForSession(d.callId, approval);
      }
    }),
  );
  setHandler(agentDenySignal, (raw) =>
    guard('signal deny', () => {
      const d = parsePayload(denySchema, raw, 'deny');
      const owner = subAgents?.owner(d.callId) ?? null;
      if (owner !== null && subAgents !== null) {
        void subAgents.deny(owner, d).catch(() => undefined);
        return;
      }
      const r = turns.apply({ type: 'tool', callId: d.callId, event: { type: 'denied', ...(d.reason ? { reason: d.reason } : {}) } });
      if (!r.ok) rejected('signal deny', r.error);
    }),
  );
  // A steer its parent session forwards (docs/sub-agents.md "Steering a child"): the turn takes it at its next safe boundary.
  setHandler(agentSteerSignal, (raw) =>
    guard('signal steer', () => {
      const s = parsePayload(steerSchema, raw, 'steer');
      const r = turns.apply({ type: 'steer', text: s.text });
      if (!r.ok) rejected('signal steer', r.error);
    }),
  );
  setHandler(agentPendingApprovalsQuery, () => pending());
  if (subAgents !== null) setHandler(subAgentReportSignal, (raw) => host.post(() => subAgents.report(raw)));
  if (subAgents !== null) setHandler(subAgentSlotAnswerSignal, (raw) => host.post(() => subAgents.placeAnswer(raw)));
  // The agent's own log by query, as the goal's (its tool calls and their results).
  setHandler(agentEventsQuery, (raw) => host.events(parsePayload(transcriptQuerySchema, raw, 'events') ?? {}));
  host.start('turn', () => turns.state?.status ?? 'idle', () => {
    const started = turns.start(`${agentId}:turn`, delegation !== undefined ? delegation.prompt : taskPrompt(input.goal, input, input.earlierAttempts), input.limits);
    if (!started.ok) rejected('start', started.error);
  });

  try {
    await condition(() => result !== null && !turns.busy);
  } catch (error) {
    if (!isCancellation(error)) throw error;
    // Cancelled by the goal: the turn is interrupted (its activities are cancelled with
    // the workflow's scope) and the agent ends cancelled once they confirm it.
    await CancellationScope.nonCancellable(async () => {
      host.post(() => {
        const r = turns.apply({ type: 'interrupt', reason: 'the goal cancelled this task' });
        if (!r.ok) rejected('cancel', r.error);
      });
      await condition(() => !turns.busy);
      // The call it cut off was billed until its connection closed (the turn runner's
      // `settled`, in runs with its patch): the goal hears of it before the agent ends. Sent
      // from here, since a signal from the cancelled workflow's own scope would not go out.
      // A quiet sub-agent's parent has not heard its spend yet: this last report says it.
      if (quietReports) reportToGoal(true);
      else if (settled !== ZERO_USAGE) {
        reportKey = '';
        reportToGoal();
      }
      await sent;
    });
    throw error;
  }
  const finished = result as unknown as TurnResult;
  const decided = decideTaskOutcome(finished, { finishTaskOffered: input.tools.some((t) => t.spec.name === FINISH_TASK) });
  folded = { ...folded, evidence: { ...folded.evidence, summary: decided.agentSummary } };
  const evidence: TaskEvidence = folded.evidence;
  answered = true;
  host.report();
  // A goal with checkpoints: the workspace as this agent left it (a goal fork after this task starts from it).
  const checkpoint = input.checkpoint !== undefined ? await checkpointAgentEnd(input.checkpoint, { store: input.storeDir, storeId: input.storeId, workspace: input.workspace, route: routing.route, conversation }) : undefined;
  await sent;
  host.stream.detachPollers();
  return { agentId, taskId: input.taskId, attempt: input.attempt, outcome: decided.outcome, summary: decided.summary, turnOutcome: finished.outcome, evidence, usage: settled === ZERO_USAGE ? finished.usage : usageNow(), steps: finished.steps, ...(finished.outcome === 'budget_exhausted' && finished.exhaustion !== null ? { exhaustion: finished.exhaustion } : {}), ...(checkpoint !== undefined ? { checkpoint } : {}) };
}
