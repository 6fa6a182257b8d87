// The goal's task agents: each task attempt runs as a child agent workflow
// (workflows/agent.ts). Here: starting and cancelling them, their reports (usage, pending
// approvals, evidence; trusted only with the agent's secret), approvals forwarded to them,
// what each attempt did (told to the next attempt), and their usage rolled up into the
// goal's budget.
import { CancellationScope, getExternalWorkflowHandle, isCancellation, patched, startChild, uuid4 } from '@temporalio/workflow';
import { goalMachine, ZERO_USAGE, type GoalDirective, type GoalEvent, type GoalState, type Usage } from '../machines/index';
import { agentShare, shareSlots } from '../machines/budget-share';
import { addUsage, type TurnLimits } from '../machines/budget';
import { commandEnding } from '../machines/evidence';
import { approvalFrom, defaultPolicy, unknownCallMessage, type PolicyConfig } from '../machines/policy';
import { agentWorkflow, type AgentResult } from './agent';
import { approveSchema, denySchema, type GoalPendingApproval, type GoalRunnerEvent } from './definitions';
import { agentApproveSignal, agentDenySignal, agentReportSchema, type TaskEvidence } from './protocol/agent';
import type { ResolvedGoalOptions } from './goal-options';
import type { AgentInput } from './protocol/agent';
import type { GoalOptions } from './protocol/goal';
import { approverLabel, failureMessage, parsePayload as parse } from './payloads';
import { refusal, validated } from './refusal';
import { describeAttempts, type AttemptRecord } from './planning';
import type { ToolEntry } from './protocol/tool-entry';
import { hasPatch, stampedMemo, startSearchAttributes } from './run-format';

/** Goals from this marker on count what their agents report after the goal ended (a cancelled agent's cut-off call, billed until its connection closed). */
export const LATE_USAGE_PATCH = 'goal-late-agent-usage';

/** Agents of goals started before it got their goal's store id (their model calls were not checked). */
const AGENTS_CHECK_STORE_PATCH = 'agents-check-store-id';

export interface AgentPoolHost {
  goalId: string;
  /** The goal's options, resolved (workflows/goal-options.ts): every agent gets the same defaults. */
  options: ResolvedGoalOptions;
  goal(): GoalState;
  setup(): { tools: ToolEntry[]; toolsRef: string | null; policy: PolicyConfig | null; storeId?: string | undefined };
  /** Where the workspace is now (an operator may have moved it off a dead host); null: shared. */
  workspaceHost(): string | null;
  publish(event: GoalRunnerEvent): void;
  refuse(source: string, machine: string, event: string, message: string): void;
  post(work: () => void): void;
  record(source: string, event: GoalEvent): void;
  /** What each agent is given to checkpoint the workspace at its end (goals with checkpoints: ./goal-checkpoints.ts). */
  agentInput?(): Partial<Pick<AgentInput, 'checkpoint'>>;
  /** An attempt returned its result (before the machine hears of it). */
  attemptEnded?(a: { taskId: string; attempt: number; agentId: string; outcome: 'succeeded' | 'failed'; planVersion: number; result: string; evidence: string[]; usage: Usage; checkpoint: AgentResult['checkpoint'] }): void;
}

/** What one run hands the next (no agent runs at a hand-over: see goal.ts). */
export interface AgentCarry {
  attempts: Record<string, AttemptRecord[]>;
  usage: Record<string, Usage>;
  evidence: Record<string, TaskEvidence>;
}

interface Child {
  taskId: string;
  attempt: number;
  scope: CancellationScope;
  token: string;
  evidence: TaskEvidence | null;
  /** The part of the goal's budget it was started with (machines/budget-share.ts). */
  share: TurnLimits;
}

export class AgentPool {
  /** Running child agents by agent id. */
  readonly children = new Map<string, Child>();
  /** What each finished (or lost) attempt did, by task: the next attempt's agent is told. */
  private readonly attempts: Map<string, AttemptRecord[]>;
  readonly usage: Record<string, Usage>;
  readonly evidence: Record<string, TaskEvidence>;
  private readonly approvals = new Map<string, GoalPendingApproval[]>();
  /**
   * What agents reported after the goal had ended: the goal stopped and cancelled them, and
   * the model calls it cut off were billed until their connections closed. The machine's
   * figures are final then (its stopped state takes no event); the goal's result adds these.
   */
  late: Usage = ZERO_USAGE;

  constructor(
    private readonly h: AgentPoolHost,
    carry?: AgentCarry,
  ) {
    this.attempts = new Map(Object.entries(carry?.attempts ?? {}));
    this.usage = { ...carry?.usage };
    this.evidence = { ...carry?.evidence };
  }

  carry(): AgentCarry {
    return { attempts: Object.fromEntries(this.attempts), usage: { ...this.usage }, evidence: { ...this.evidence } };
  }

  pending(): GoalPendingApproval[] {
    return [...this.approvals.values()].flat();
  }

  running(): { agentId: string; taskId: string }[] {
    return [...this.children].map(([agentId, c]) => ({ agentId, taskId: c.taskId }));
  }

  cancel(agentId: string): void {
    this.children.get(agentId)?.scope.cancel();
  }

  start(d: Extract<GoalDirective, { type: 'start_child_agent' }>): void {
    const { options, goalId } = this.h;
    const scope = new CancellationScope();
    // Reports: Temporal tells a signal's receiver nothing about its sender, so any client
    // could send a well-formed `agentReport` (a forged approval request was forwarded, a
    // forged 999,999-token report stopped a goal). Each agent gets a secret at start and
    // every report must carry it; the goal trusts a report only from the running agent
    // whose secret it holds. Results alone would not do: approvals must surface while the
    // agent runs. The secret is in this goal's and the child's histories, so whoever can
    // read those could forge a report — but such a caller can terminate the goal anyway;
    // namespace access is Temporal's trust boundary.
    const token = uuid4();
    const goal = this.h.goal();
    // Agents running at once share the goal's budget: their calls fit their shares, so together they fit the goal's.
    const running = [...this.children].map(([agentId, c]) => ({ share: c.share, used: this.usage[agentId] ?? ZERO_USAGE }));
    const slots = shareSlots(goal.tasks, new Set([...this.children.values()].map((c) => c.taskId)), options.maxConcurrency);
    const share: TurnLimits = { ...agentShare(goal.config.limits, goal.usage, running, slots), maxSteps: options.maxStepsPerTask };
    this.children.set(d.agentId, { taskId: d.taskId, attempt: d.attempt, scope, token, evidence: null, share });
    const earlier = this.attempts.get(d.taskId) ?? [];
    const { tools, toolsRef, policy, storeId } = this.h.setup();
    const workspaceHost = this.h.workspaceHost();
    const input: AgentInput = {
      goalId,
      goal: options.goal,
      taskId: d.taskId,
      attempt: d.attempt,
      title: d.title,
      instructions: d.instructions,
      role: d.role,
      workspace: options.workspace,
      ...(workspaceHost !== null ? { workspaceHost, workspaceHostWaitMs: options.workspaceHostWaitMs } : {}),
      storeDir: options.storeDir,
      // Its model calls are checked against the goal's store, as a session's are (older goals' agents were not).
      ...(storeId !== undefined && hasPatch(AGENTS_CHECK_STORE_PATCH) ? { storeId } : {}),
      model: options.model,
      maxTokens: options.maxTokens,
      // The definitions are in the store (toolsRef): the agent needs only names and options,
      // so each child's start event stays small.
      tools: toolsRef === null ? tools : tools.map((t) => ({ ...t, spec: { name: t.spec.name, description: '', input_schema: { type: 'object' } } })),
      toolsRef,
      policy: policy ?? defaultPolicy,
      headless: options.headless,
      limits: share,
      approvalTimeoutMs: options.approvalTimeoutMs,
      maxParallelTools: options.maxParallelTools,
      retryBackoffMs: options.retryBackoffMs,
      modelActivity: options.modelActivity,
      thinking: thinkingFor(options, d.role),
      reportToken: token,
      ...(earlier.length > 0 ? { earlierAttempts: describeAttempts(earlier) } : {}),
      ...this.h.agentInput?.(),
    };
    const source = `agent ${d.agentId}`;
    scope
      .run(async () => {
        const child = await startChild(agentWorkflow, {
          workflowId: d.agentId,
          args: [input],
          // Stamped, and showing its kind and workspace from the start (workflows/run-format.ts).
          memo: stampedMemo(),
          typedSearchAttributes: startSearchAttributes('agent', input.workspace),
          staticSummary: `task ${d.taskId} (attempt ${d.attempt}): ${d.title}`,
        });
        this.h.post(() => this.h.record(source, { type: 'task_started', taskId: d.taskId, attempt: d.attempt }));
        return child.result();
      })
      .then(
        (result: AgentResult) =>
          this.h.post(() => {
            this.finish(d.agentId);
            this.evidence[d.taskId] = result.evidence;
            this.remember(d.taskId, d.attempt, `${result.outcome}: ${result.summary}`, result.evidence);
            // Usage the agent reported is counted; the rest (usually nothing) comes with the result.
            const unreported = usageSince(this.usage[d.agentId] ?? ZERO_USAGE, result.usage);
            this.usage[d.agentId] = result.usage;
            this.h.attemptEnded?.({ taskId: d.taskId, attempt: d.attempt, agentId: d.agentId, outcome: result.outcome, planVersion: this.h.goal().planVersion, result: result.summary, evidence: describeEvidence(result.evidence), usage: result.usage, checkpoint: result.checkpoint });
            this.h.record(source, {
              type: 'task_finished',
              taskId: d.taskId,
              attempt: d.attempt,
              outcome: result.outcome,
              result: result.summary,
              evidence: describeEvidence(result.evidence),
              ...(unreported !== null ? { usage: unreported } : {}),
              agentUsage: result.usage,
              // Its share of the budget ran out (or its next call could not fit it): the goal's budget did.
              ...(result.exhaustion !== undefined ? { exhaustion: result.exhaustion } : {}),
            });
          }),
        (error: unknown) =>
          this.h.post(() => {
            const lost = this.children.get(d.agentId);
            this.finish(d.agentId);
            // What it reported before it failed is all the goal knows of what it did.
            const seen = lost?.evidence ?? { filesChanged: [], commands: [], summary: null };
            this.remember(d.taskId, d.attempt, isCancellation(error) ? 'cancelled before it finished' : `failed: ${failureMessage(error)}`, seen);
            // Cancelled by this goal: the machine already counted the task as cancelled.
            if (isCancellation(error) && scope.consideredCancelled) return;
            this.h.record(source, { type: 'task_finished', taskId: d.taskId, attempt: d.attempt, outcome: 'failed', result: failureMessage(error) });
          }),
      );
  }

  /** The `agentReport` signal (registered once `pending` and the report exist). */
  report(raw: unknown): void {
    const goal = this.h.goal();
    const refuse = (message: string) => this.h.refuse('signal agentReport', 'autonomy', 'agentReport', message);
    // Goals whose history predates the token replay as they ran (their agents sent none).
    const checked = hasPatch('agent-report-token');
    let r: ReturnType<typeof agentReportSchema.parse>;
    try {
      r = parse(checked ? agentReportSchema : agentReportSchema.extend({ token: agentReportSchema.shape.token.optional() }), raw, 'agentReport') as typeof r;
    } catch (error) {
      return refuse((error as Error).message);
    }
    const child = this.children.get(r.agentId);
    if (!checked) {
      if (!child) return this.countUsage(r.agentId, r.usage, goal);
    } else if (!child || child.token !== r.token || child.taskId !== r.taskId || child.attempt !== r.attempt) {
      // One message for every mismatch: a forger learns nothing about which part was wrong.
      return refuse(`report not from a running agent of this goal (agent ${r.agentId.slice(0, 200)})`);
    }
    if (r.evidence) child.evidence = r.evidence;
    const before = new Set((this.approvals.get(r.agentId) ?? []).map((p) => p.callId));
    for (const p of r.pendingApprovals) {
      if (before.has(p.callId)) continue;
      this.h.publish({ kind: 'agent.approval_requested', agentId: r.agentId, taskId: r.taskId, callId: p.callId, toolName: p.name, input: p.input, reason: p.reason });
    }
    this.approvals.set(r.agentId, r.pendingApprovals.map((p) => ({ ...p, agentId: r.agentId, taskId: r.taskId })));
    this.countUsage(r.agentId, r.usage, goal);
  }

  /** approve / deny: the agent whose call it is gets the signal. */
  findCall(callId: string): GoalPendingApproval {
    const call = this.pending().find((p) => p.callId === callId);
    if (call) return call;
    throw refusal('unknown_call', unknownCallMessage(callId, this.pending()));
  }

  /**
   * The goal's approve validator: the decision the agent will make (machines/approval.ts),
   * made before the answer is forwarded, so a refusal reaches the caller with its code
   * instead of being recorded inside the agent where the caller never hears it.
   */
  mustApprove(raw: unknown): void {
    const input = validated(() => parse(approveSchema, raw, 'approve'));
    const d = approvalFrom(input, this.pending(), approverLabel(input));
    if (!d.ok) throw refusal(d.code, d.message);
  }

  async forward(kind: 'approve' | 'deny', raw: unknown): Promise<{ callId: string; agentId: string }> {
    const input = kind === 'approve' ? parse(approveSchema, raw, 'approve') : parse(denySchema, raw, 'deny');
    const call = this.findCall(input.callId);
    const child = getExternalWorkflowHandle(call.agentId);
    this.h.publish({ kind: 'agent.approval_answered', agentId: call.agentId, taskId: call.taskId, callId: call.callId, decision: kind === 'approve' ? 'approved' : 'denied' });
    if (kind === 'approve') await child.signal(agentApproveSignal, input);
    else await child.signal(agentDenySignal, input);
    return { callId: call.callId, agentId: call.agentId };
  }

  private remember(taskId: string, attempt: number, ended: string, e: TaskEvidence): void {
    const list = this.attempts.get(taskId) ?? [];
    list.push({ attempt, ended, filesChanged: e.filesChanged, commands: e.commands });
    this.attempts.set(taskId, list.slice(-5));
  }

  /** The agent is gone, and its approvals with it. */
  private finish(agentId: string): void {
    this.children.delete(agentId);
    this.approvals.delete(agentId);
  }

  /** An agent's cumulative usage: what is new since its last report counts against the budget. */
  private countUsage(agentId: string, total: Usage, goal: GoalState): void {
    const delta = usageSince(this.usage[agentId] ?? ZERO_USAGE, total);
    if (delta === null) return;
    this.usage[agentId] = { ...total };
    if (!goalMachine.isTerminal(goal)) this.h.record(`agent ${agentId}`, { type: 'usage_reported', usage: delta });
    // Goals recorded before replay as they ran (their results without it).
    else if (patched(LATE_USAGE_PATCH)) this.late = addUsage(this.late, delta);
  }
}

/** The thinking an agent of `role` gets from the goal's options. */
export function thinkingFor(options: Pick<GoalOptions, 'thinking'>, role: string): { budgetTokens: number } | undefined {
  const byRole = options.thinking?.byRole;
  if (byRole !== undefined && Object.hasOwn(byRole, role)) return byRole[role] ?? undefined;
  const budget = options.thinking?.budgetTokens;
  return budget !== undefined ? { budgetTokens: budget } : undefined;
}

/** What `total` adds to `before`, or null when nothing. */
export function usageSince(before: Usage, total: Usage): Usage | null {
  const delta: Usage = {
    inputTokens: Math.max(0, total.inputTokens - before.inputTokens),
    outputTokens: Math.max(0, total.outputTokens - before.outputTokens),
    costUsd: Math.max(0, total.costUsd - before.costUsd),
    unpricedCalls: Math.max(0, total.unpricedCalls - before.unpricedCalls),
  };
  return delta.inputTokens + delta.outputTokens + delta.costUsd + delta.unpricedCalls === 0 ? null : delta;
}

function describeEvidence(e: TaskEvidence): string[] {
  return [
    ...e.filesChanged.map((f) => `file changed: ${f}`),
    ...e.commands.map((c) => `command: ${c.command} → ${commandEnding(c)}`),
  ];
}
