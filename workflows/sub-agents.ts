// A run's sub-agents (docs/sub-agents.md): each `agent` call of its model starts a child agent
// workflow (workflows/agent.ts, the goals' task agent with a `delegation`), named
// `<parent>/agent-<callId>`, and the call's result is the child's answer. The rules are
// machines/sub-agents.ts's (caps, the subset of tools, the budget share); here they are applied
// and executed: the type loaded, the child started and awaited in the call's cancellation scope
// (an interrupt of the parent's turn cancels it), its reports taken (usage, waiting approvals,
// what it did), its approvals shown as the parent's and answered through it.
import { CancellationScope, condition, getExternalWorkflowHandle, isCancellation, patched, proxyActivities, startChild, uuid4 } from '@temporalio/workflow';
import type { createAgentTypeActivities } from '../activities/agent-types';
import { addUsage, ZERO_USAGE, type CallUsage, type TurnLimits, type Usage } from '../machines/budget';
import type { Json } from '../machines/core';
import type { Message } from '../machines/conversation';
import type { PolicyConfig, SessionApproval } from '../machines/policy';
import { agentToolInput, aliveRefusal, approvalLabel, capsRefusal, childLabel, childResult, planChild, AGENT_TOOL, type AgentType, type AgentToolInput, type ChildPlan, type SubAgentCaps } from '../machines/sub-agents';
import type { ToolCallEvent } from '../machines/tool-call';
import type { TurnState } from '../machines/turn';
import type { LogEvent } from '../machines/index';
import { agentApproveSignal, agentDenySignal, agentSteerSignal, agentReportSchema, taskEvidenceSchema, type AgentInput, type AgentReport } from './protocol/agent';
import type { approveSchema, denySchema, PendingApproval } from './protocol/controls';
import type { ToolEntry } from './protocol/tool-entry';
import { failureMessage } from './payloads';
import { subAgentSlotAnswerSchema, subAgentSlotAnswerSignal, subAgentSlotSchema, subAgentSlotSignal, type SubAgentSlot } from './protocol/sub-agents';
import { hasPatch, stampedMemo, startSearchAttributes, SUB_AGENT_QUIET_REPORTS_PATCH } from './run-format';
import { KeelPendingApprovals, KeelStatus } from './search-attributes';
import { routed, type WorkspaceRoute } from './workspace-host';
import { z } from 'zod';
import { lazySchema } from '../machines/lazy-schema';
import { usageSchema } from '../machines/budget';

/** What of a child's result (workflows/agent.ts AgentResult) the parent reads: checked, it comes from another workflow. */
const childResultSchema = lazySchema(() =>
  z.object({
    outcome: z.enum(['succeeded', 'failed']),
    summary: z.string(),
    turnOutcome: z.string(),
    evidence: taskEvidenceSchema,
    usage: usageSchema,
    steps: z.number().int().nonnegative(),
  }),
);

/** Descendants ask the session for places under the tree's `maxAlive` (histories recorded before did not). */
export const TREE_ALIVE_PATCH = 'sub-agents-tree-alive';

/** What a parent (a session, or a child agent that may delegate in turn) gives its sub-agents. */
export interface SubAgentParent {
  /** The parent's workflow id: children are `<parentId>/agent-<callId>`. */
  parentId: string;
  /** The root session's id: a child's approvals are the session's. */
  sessionId: string;
  /** 0 for a session, 1 for its children. */
  depth: number;
  caps: SubAgentCaps;
  /** A descendant's: the report token of the session's child it descends from (it asks the session for places under `maxAlive` with it). */
  treeToken?: string;
  /** Types given in the session's options (a workspace file of the same name is not read). */
  types: Record<string, AgentType>;
  /** What every child inherits as it is (workspace, store, policy's headless, timeouts…). */
  base: Pick<AgentInput, 'workspace' | 'workspaceHost' | 'workspaceHostWaitMs' | 'storeDir' | 'storeId' | 'maxTokens' | 'headless' | 'approvalTimeoutMs' | 'maxParallelTools' | 'retryBackoffMs' | 'modelActivity' | 'promptCacheTtl'>;
  model: string;
  system: string | null;
  thinking: AgentInput['thinking'];
  tools(): readonly ToolEntry[];
  toolsRef(): string | null;
  /** The store's identity, once setup has read it (every child's calls are checked against it). */
  storeId?(): string | undefined;
  policy(): { policy: PolicyConfig; approvals: readonly SessionApproval[] };
  turn(): TurnState | null;
  /** The parent's conversation now: a fork starts from it. */
  conversation(): { head: string | null; pending: readonly Message[] };
  route(): WorkspaceRoute | null;
  emit(event: LogEvent): void;
  /** A cancelled child's spend, counted after its call ended (the turn's `settled`). */
  settled(turnId: string, callId: string, usage: CallUsage): void;
  /** The parent's reports and views changed (a child's approvals, its usage). */
  changed(): void;
}

interface Child {
  callId: string;
  turnId: string;
  label: string;
  token: string;
  share: TurnLimits;
  usage: Usage;
  pending: AgentReport['pendingApprovals'];
  /** Files and commands already shown in the parent's stream. */
  seen: Set<string>;
}

export class SubAgents {
  /** Children running now, by agent id. */
  private readonly children = new Map<string, Child>();
  /** Calls let through the caps, by turn and step (the per-message cap). */
  private readonly perStep = new Map<string, number>();
  /** Calls let through whose child is not started yet (their type loading): alive already. */
  private readonly planning = new Set<string>();
  private count = 0;
  /** The session's: places under `maxAlive` its descendants took for their own children, by the child's id (→ the session's child they descend from). */
  private readonly treePlaces = new Map<string, string>();
  /** A descendant's: the session's answers to its asks for a place, by call id. */
  private readonly placeAnswers = new Map<string, { granted: boolean; alive: number }>();

  constructor(
    private readonly p: SubAgentParent,
    /** Children started by the parent's earlier runs (continue-as-new): labels go on from there. */
    startedBefore = 0,
  ) {
    this.count = startedBefore;
  }

  /** Children started so far, earlier runs' included (what the next run goes on from). */
  get started(): number {
    return this.count;
  }

  /** The call's name is this tool's. */
  static handles(name: string): boolean {
    return name === AGENT_TOOL;
  }

  get alive(): number {
    return this.children.size;
  }

  /** What counts against `maxAlive` here: a session's whole tree; a descendant's own children (the session then decides). */
  private aliveNow(): number {
    return this.children.size + this.planning.size + this.treePlaces.size;
  }

  /**
   * Runs one `agent` call to its tool event: a refusal, the child's answer, or its failure, each
   * with what the child spent. Throws the cancellation when the call's scope is cancelled.
   */
  async run(turnId: string, callId: string, raw: Json): Promise<ToolCallEvent> {
    const parsed = agentToolInput.safeParse(raw);
    if (!parsed.success) return { type: 'failed', error: `invalid input for agent:\n${parsed.error.issues.map((i) => `- ${i.path.join('.') || 'input'}: ${i.message}`).join('\n')}` };
    const input = parsed.data;
    const state = this.p.turn();
    const stepKey = `${turnId}:${state !== null && 'step' in state ? state.step : 0}`;
    const letThrough = this.perStep.get(stepKey) ?? 0;
    const refusal = capsRefusal({ depth: this.p.depth, caps: this.p.caps, alive: this.aliveNow(), startedThisStep: letThrough });
    if (refusal !== null) return { type: 'failed', error: refusal };
    this.perStep.set(stepKey, letThrough + 1);
    this.planning.add(callId);
    // A descendant asks the session for a place under the tree's `maxAlive` (runs recorded before
    // the tree was counted started their grandchildren without asking).
    const asks = this.p.depth > 0 && this.p.treeToken !== undefined && patched(TREE_ALIVE_PATCH);
    let took = false;
    let planned: ReturnType<typeof planChild>;
    let type: Awaited<ReturnType<SubAgents['typeOf']>>;
    try {
      if (asks) {
        const answer = await this.askPlace(callId);
        if (!answer.granted) return { type: 'failed', error: aliveRefusal(answer.alive, this.p.caps) };
        took = true;
      }
      type = await this.typeOf(input);
      planned = this.plan(turnId, callId, input, type);
    } catch (error) {
      if (took) await this.givePlaceBack(callId);
      throw error;
    } finally {
      this.planning.delete(callId);
    }
    if (!planned.ok) {
      if (took) await this.givePlaceBack(callId);
      return { type: 'failed', error: planned.error };
    }
    try {
      return await this.runChild(turnId, callId, input, type, planned.plan);
    } finally {
      if (took) await this.givePlaceBack(callId);
    }
  }

  private async runChild(turnId: string, callId: string, input: AgentToolInput, type: Awaited<ReturnType<SubAgents['typeOf']>>, plan: ChildPlan): Promise<ToolCallEvent> {
    this.count += 1;
    const label = childLabel(input, this.count);
    const agentId = `${this.p.parentId}/agent-${callId}`;
    const token = uuid4();
    const entries = this.p.tools();
    const fork = plan.fork ? this.forkPoint() : undefined;
    const tools = entries.filter((t) => plan.tools.includes(t.spec.name));
    const system = plan.fork ? this.p.system : type?.ok === true ? type.type.system : null;
    const { policy, approvals } = this.p.policy();
    const storeId = this.p.storeId?.();
    const childInput: AgentInput = {
      ...this.p.base,
      ...(storeId !== undefined ? { storeId } : {}),
      goalId: this.p.sessionId,
      goal: input.prompt,
      taskId: `agent-${callId}`,
      attempt: 1,
      title: input.description,
      instructions: input.prompt,
      role: input.subagent_type ?? (plan.fork ? 'fork' : 'general'),
      model: plan.model,
      // A fork sends the parent's stored definitions (the same prefix, read from the cache); any other child its own subset.
      tools,
      toolsRef: plan.fork ? this.p.toolsRef() : null,
      policy,
      limits: plan.limits,
      reportToken: token,
      ...(plan.fork ? (this.p.thinking !== undefined ? { thinking: this.p.thinking } : {}) : type?.ok === true && type.type.thinkingBudgetTokens !== undefined ? { thinking: { budgetTokens: type.type.thinkingBudgetTokens } } : {}),
      delegation: {
        sessionId: this.p.sessionId,
        parentCallId: callId,
        label,
        depth: this.p.depth + 1,
        prompt: input.prompt,
        system,
        ...(fork !== undefined ? { fork } : {}),
        caps: this.p.caps,
        ...(Object.keys(this.p.types).length > 0 ? { types: this.p.types } : {}),
        ...(approvals.length > 0 ? { approvals: approvals.map((a) => ({ ...a })) } : {}),
        // The session's child is the root of its subtree: its token (its descendants ask with it).
        ...(this.p.depth === 0 ? { treeToken: token } : this.p.treeToken !== undefined ? { treeToken: this.p.treeToken } : {}),
      },
    };
    const child: Child = { callId, turnId, label, token, share: plan.limits, usage: ZERO_USAGE, pending: [], seen: new Set() };
    this.children.set(agentId, child);
    this.p.emit({ kind: 'subagent.started', callId, agentId, label, agentType: input.subagent_type ?? null, fork: plan.fork, depth: this.p.depth + 1 });
    try {
      // A quiet child (format 4) starts showing `working`, so its first step writes no search attributes.
      const quiet = hasPatch(SUB_AGENT_QUIET_REPORTS_PATCH);
      // By name: a session does not evaluate the agent's modules until a child of its own runs (workflows/index.ts).
      const handle = await startChild('agentWorkflow', {
        workflowId: agentId,
        args: [childInput],
        memo: stampedMemo(),
        typedSearchAttributes: [...startSearchAttributes('agent', this.p.base.workspace), ...(quiet ? [{ key: KeelStatus, value: 'working' }, { key: KeelPendingApprovals, value: 0 }] : [])],
        staticSummary: `${label}: ${input.description}`,
      });
      const result = childResultSchema.parse(await handle.result());
      // What it did that its reports have not shown yet (a quiet child sends its last commands and files with its answer).
      this.showEvidence(agentId, child, result.evidence);
      this.finish(agentId);
      const outcome = childResult({
        label,
        outcome: result.outcome,
        summary: result.summary,
        turnOutcome: result.turnOutcome,
        filesChanged: result.evidence.filesChanged,
        commands: result.evidence.commands,
        usage: result.usage,
        steps: result.steps,
      });
      this.p.emit({ kind: 'subagent.finished', callId, agentId, label, outcome: result.outcome, summary: result.summary.slice(0, 2_000), usage: result.usage, steps: result.steps });
      return outcome.isError ? { type: 'failed', error: outcome.content, usage: result.usage } : { type: 'succeeded', output: outcome.content, usage: result.usage };
    } catch (error) {
      this.finish(agentId);
      const spent = child.usage;
      if (isCancellation(error)) {
        // The turn moved on when it cancelled the call: what the child spent comes after it.
        this.p.emit({ kind: 'subagent.finished', callId, agentId, label, outcome: 'cancelled', summary: 'cancelled by its parent', usage: spent, steps: 0 });
        if (spent !== ZERO_USAGE) this.p.settled(turnId, callId, { inputTokens: spent.inputTokens, outputTokens: spent.outputTokens, costUsd: spent.costUsd });
        throw error;
      }
      const message = failureMessage(error);
      this.p.emit({ kind: 'subagent.finished', callId, agentId, label, outcome: 'failed', summary: message, usage: spent, steps: 0 });
      return { type: 'failed', error: `agent ${label} failed: ${message}`, usage: spent };
    }
  }

  private finish(agentId: string): void {
    this.children.delete(agentId);
    // Its subtree ends with it (a parent's close cancels its children): their places are free.
    for (const [place, under] of this.treePlaces) if (under === agentId) this.treePlaces.delete(place);
    this.p.changed();
  }

  // ---- maxAlive over the session's tree --------------------------------------------------

  /** A descendant's ask: a place for its child `callId`, answered by the session. */
  private async askPlace(callId: string): Promise<{ granted: boolean; alive: number }> {
    await this.signalSession({ op: 'take', requester: this.p.parentId, callId, token: this.p.treeToken ?? '' });
    await condition(() => this.placeAnswers.has(callId));
    const answer = this.placeAnswers.get(callId)!;
    this.placeAnswers.delete(callId);
    return answer;
  }

  /** Sent even from a cancelled call: the place must come free. */
  private givePlaceBack(callId: string): Promise<void> {
    return CancellationScope.nonCancellable(() => this.signalSession({ op: 'give_back', requester: this.p.parentId, callId, token: this.p.treeToken ?? '' }));
  }

  private signalSession(slot: SubAgentSlot): Promise<void> {
    return getExternalWorkflowHandle(this.p.sessionId).signal(subAgentSlotSignal, slot).catch(() => undefined);
  }

  /** The session's side (signal `agentSlot`): a place under `maxAlive` taken or given back by a descendant, checked by its subtree's token. */
  place(raw: unknown): boolean {
    const parsed = subAgentSlotSchema.safeParse(raw);
    if (!parsed.success || this.p.depth !== 0) return false;
    const r = parsed.data;
    const under = [...this.children].find(([id, c]) => r.requester.startsWith(`${id}/`) || r.requester === id ? c.token === r.token : false)?.[0];
    if (under === undefined) return false;
    const place = `${r.requester}/agent-${r.callId}`;
    if (r.op === 'give_back') {
      this.treePlaces.delete(place);
      this.p.changed();
      return true;
    }
    const alive = this.aliveNow();
    const granted = this.treePlaces.has(place) || alive < this.p.caps.maxAlive;
    if (granted) this.treePlaces.set(place, under);
    void getExternalWorkflowHandle(r.requester).signal(subAgentSlotAnswerSignal, { callId: r.callId, granted, alive }).catch(() => undefined);
    this.p.changed();
    return true;
  }

  /** A descendant's side (signal `agentSlotAnswer`). */
  placeAnswer(raw: unknown): boolean {
    const parsed = subAgentSlotAnswerSchema.safeParse(raw);
    if (!parsed.success) return false;
    this.placeAnswers.set(parsed.data.callId, { granted: parsed.data.granted, alive: parsed.data.alive });
    return true;
  }

  /** The named type: the options' (as given), else the workspace's file, read now. */
  private async typeOf(input: AgentToolInput): Promise<{ ok: true; type: AgentType } | { ok: false; error: string } | null> {
    const name = input.subagent_type;
    if (name === undefined) return null;
    const given = Object.hasOwn(this.p.types, name) ? this.p.types[name] : undefined;
    if (given !== undefined) return { ok: true, type: given };
    const { loadAgentType } = proxyActivities<ReturnType<typeof createAgentTypeActivities>>({ startToCloseTimeout: '1 minute', retry: { maximumAttempts: 3 }, ...routed(this.p.route()) });
    return loadAgentType({ workspace: this.p.base.workspace, name });
  }

  private plan(turnId: string, callId: string, input: AgentToolInput, type: Awaited<ReturnType<SubAgents['typeOf']>>): ReturnType<typeof planChild> {
    const state = this.p.turn();
    const mine = [...this.children.values()];
    // Other agent calls of this message not started yet share what is free with this one.
    const waiting = state?.status === 'executing_tools' ? state.calls.filter((c) => c.name === AGENT_TOOL && c.callId !== callId && c.status === 'running' && !mine.some((m) => m.callId === c.callId)).length : 0;
    return planChild({
      input,
      type,
      depth: this.p.depth,
      caps: this.p.caps,
      parentTools: this.p.tools().map((t) => t.spec.name),
      parentModel: this.p.model,
      turnLimits: state?.config.limits ?? { inputTokens: null, outputTokens: null, costUsd: null, maxSteps: null },
      turnUsage: state?.usage ?? ZERO_USAGE,
      running: mine.filter((m) => m.turnId === turnId).map((m) => ({ share: m.share, used: m.usage })),
      waitingThisStep: waiting,
    });
  }

  /** The parent's conversation up to its last user message: the prefix its last model call sent (and cached). */
  private forkPoint(): { head: string | null; pending: Message[] } {
    const { head, pending } = this.p.conversation();
    const kept = [...pending];
    while (kept.length > 0 && kept[kept.length - 1]?.role === 'assistant') kept.pop();
    return { head, pending: kept };
  }

  // ---- reports, approvals -------------------------------------------------------------------

  /** A child's report (signal `agentReport`): trusted only from a running child with its secret. */
  report(raw: unknown): boolean {
    const parsed = agentReportSchema.safeParse(raw);
    if (!parsed.success) return false;
    const r = parsed.data;
    const child = this.children.get(r.agentId);
    if (child === undefined || child.token !== r.token) return false;
    child.usage = r.usage;
    // A call newly waiting is announced in the parent's stream as the parent's own would be (chat, AG-UI, the console follow it).
    for (const p of r.pendingApprovals) {
      if (!child.pending.some((q) => q.callId === p.callId)) this.p.emit({ kind: 'tool.approval_requested', callId: p.callId, toolName: p.name, policyReason: p.reason !== null && p.reason.includes(' wants to ') ? p.reason : `${approvalLabel(child.label, p.name, p.input)}${p.reason !== null ? ` (${p.reason})` : ''}` });
    }
    child.pending = r.pendingApprovals;
    if (r.evidence !== undefined) this.showEvidence(r.agentId, child, r.evidence);
    this.p.changed();
    return true;
  }

  private showEvidence(agentId: string, child: Child, evidence: Pick<AgentReport['evidence'] & object, 'commands' | 'filesChanged'>): void {
    for (const c of evidence.commands) this.show(agentId, child, `$ ${c.command}`, { command: c.command, file: null });
    for (const f of evidence.filesChanged) this.show(agentId, child, `w ${f}`, { command: null, file: f });
  }

  private show(agentId: string, child: Child, key: string, what: { command: string | null; file: string | null }): void {
    if (child.seen.has(key)) return;
    child.seen.add(key);
    this.p.emit({ kind: 'subagent.tool', callId: child.callId, agentId, label: child.label, ...what });
  }

  /** The children's calls waiting for a human, as the parent's, labelled with the child. */
  pending(): PendingApproval[] {
    return [...this.children].flatMap(([agentId, c]) =>
      c.pending.map((p) => ({
        callId: p.callId,
        name: p.name,
        input: p.input,
        // Nested children's calls already carry their own label.
        reason: p.reason !== null && p.reason.includes(' wants to ') ? p.reason : `${approvalLabel(c.label, p.name, p.input)}${p.reason !== null ? ` (${p.reason})` : ''}`,
        turnId: c.turnId,
        agent: { agentId, label: c.label, parentCallId: c.callId },
      })),
    );
  }

  /** The child whose call this is, or null. */
  owner(callId: string): string | null {
    for (const [agentId, c] of this.children) if (c.pending.some((p) => p.callId === callId)) return agentId;
    return null;
  }

  /** An answer for a child's call, sent on to it (it decides, as a goal's agent does). */
  approve(agentId: string, answer: z.input<typeof approveSchema>): Promise<void> {
    return getExternalWorkflowHandle(agentId).signal(agentApproveSignal, answer);
  }

  deny(agentId: string, answer: z.input<typeof denySchema>): Promise<void> {
    return getExternalWorkflowHandle(agentId).signal(agentDenySignal, answer);
  }

  /** The running child a name addresses: its workflow id, its label (`research-1`) or the `agent` call's id. */
  target(name: string): string | null {
    for (const [agentId, c] of this.children) if (agentId === name || c.label === name || c.callId === name) return agentId;
    return null;
  }

  /** A steer for a child's running turn, sent on to it (its turn takes it at the next safe boundary). */
  steer(agentId: string, text: string): Promise<void> {
    return getExternalWorkflowHandle(agentId).signal(agentSteerSignal, { text });
  }

  /** Total spend reported by the running children (for views). */
  runningUsage(): Usage {
    return [...this.children.values()].reduce((u, c) => addUsage(u, c.usage), ZERO_USAGE);
  }
}
