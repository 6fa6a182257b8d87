// The goal workflow: the autonomy loop (seed 002; SPEC §2). The `autonomy` machine decides
// everything — when to plan, whether a plan is valid, which tasks start, when to review,
// when to stop; this workflow applies events to it (signals, updates, model answers, child
// results, timers, usage reports) and executes its directives: the planner and the critic
// as model activities that must answer through a tool, each task attempt as a child agent
// workflow (workflows/agent.ts), timers, the event log. Approvals of the agents' tool calls
// surface here and are answered here; the agents' usage rolls up into the goal's budget.
import {
  allHandlersFinished,
  CancellationScope,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  patched,
  proxyActivities,
  setCurrentDetails,
  setDefaultSignalHandler,
  setDefaultUpdateHandler,
  setHandler,
  sleep,
  startChild,
  upsertSearchAttributes,
  uuid4,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import { WorkflowStream } from '@temporalio/workflow-streams/workflow';
import type { StoreActivities } from '../activities/conversation-store';
import type { ModelActivities, ModelCallInput, ModelCallResult } from '../activities/llm';
import { MODEL_ACTIVITY_OPTIONS } from '../activities/llm-options';
import type { ToolActivities } from '../activities/tools/index';
import {
  createGoal,
  findExhaustion,
  goalMachine,
  remainingForTurn,
  ZERO_USAGE,
  type BudgetLimits,
  type CallUsage,
  type GoalDirective,
  type GoalEvent,
  type GoalReport,
  type GoalState,
  type LogEvent,
  type Review,
  type Task,
  type TaskInput,
  type TransitionError,
  type Usage,
} from '../machines/index';
import { afterFailedRound, afterUnusableAnswer } from '../machines/answer-retry';
import { defaultPolicy, type PolicyConfig, type PolicyConfigInput } from '../machines/policy';
import type { AgentInput, AgentResult } from './agent';
import { agentWorkflow } from './agent';
import {
  agentReportSchema,
  agentReportSignal,
  approvePlanSignal,
  approvePlanUpdate,
  approveSchema,
  approveSignal,
  cancelSignal,
  cancelUpdate,
  denySchema,
  denySignal,
  EVENTS_TOPIC,
  GOAL_SIGNALS,
  goalApproveUpdate,
  goalEventsQuery,
  goalDenyUpdate,
  goalPendingApprovalsQuery,
  goalStateQuery,
  goalUsageQuery,
  noPayloadSchema,
  planQuery,
  reasonSchema,
  rejectPlanSchema,
  rejectPlanSignal,
  rejectPlanUpdate,
  resolveTaskSchema,
  resolveTaskSignal,
  resolveTaskUpdate,
  transcriptQuerySchema,
  type GoalControlResult,
  type GoalLogEntry,
  type GoalPendingApproval,
  type GoalRunnerEvent,
  type GoalStateView,
  type GoalUsageView,
  type TaskEvidence,
} from './definitions';
import { failureMessage, parsePayload as parse, parseStartInput, rejectUnknownUpdate, unknownSignal } from './payloads';
import {
  CRITIC_SYSTEM,
  describeAttempts,
  finishTaskTool,
  type AttemptRecord,
  PLANNER_SYSTEM,
  planPrompt,
  reviewPrompt,
  shapeProblems,
  SUBMIT_PLAN,
  SUBMIT_REVIEW,
  submitPlanSchema,
  submitPlanTool,
  submitReviewSchema,
  submitReviewTool,
  toTaskInputs,
} from './planning';
import { preview } from './preview';
import { SerialQueue, Timers } from './runtime';
import { goalOptionsSchema } from './start-input';
import { code, escapeMarkdown } from './markdown';
import { KeelKind, KeelPendingApprovals, KeelStatus, KeelWorkspace } from './search-attributes';
import { modelFailure, type ToolEntry } from './turn-runner';
import { eventsPage } from './event-log';
import { reportEvent } from './telemetry-sink';

export interface GoalOptions {
  /** What to achieve, in words. */
  goal: string;
  /** Absolute path of the directory every task agent works in. */
  workspace: string;
  /** Model of the planner, the critic and the agents (default claude-sonnet-4-6). */
  model?: string;
  maxTokens?: number;
  /** Approval policy of the agents' tools, over the workspace's .keel/policy.json. */
  policy?: PolicyConfigInput;
  /** No human will answer: `ask` becomes the policy's headless choice. */
  headless?: boolean;
  /** Start executing without waiting for approvePlan. */
  autoApprove?: boolean;
  /** Task agents running at once (default 2). */
  maxConcurrency?: number;
  /** Attempts per task before it needs a human (default 2). */
  maxTaskAttempts?: number;
  /** Proposals per planning round (default 3). */
  maxPlanAttempts?: number;
  /** Critic reviews before the goal stops (default 3). */
  maxReviewCycles?: number;
  /** How long a plan waits for approval before the goal stops (default: forever). */
  planApprovalTimeoutMs?: number | null;
  /** The goal's budget across the planner, the critic and every agent. */
  limits?: Partial<Pick<BudgetLimits, 'inputTokens' | 'outputTokens' | 'costUsd' | 'wallClockMs'>>;
  /** Each agent's model steps (default 25). */
  maxStepsPerTask?: number;
  /** How long an agent's tool call waits for approval (default: forever). */
  approvalTimeoutMs?: number | null;
  maxParallelTools?: number;
  retryBackoffMs?: number[];
  /** Conversation store directory; default `<workspace>/.keel/store`. */
  storeDir?: string;
  /** Overrides of the model activity's options (tests shorten retries). */
  modelActivity?: Partial<ActivityOptions>;
  /**
   * Extended thinking for the task agents: `budgetTokens` for every role, `byRole` per task
   * role (null turns it off for that role). The planner and the critic answer through a
   * forced tool call, which the API does not allow with thinking, so they never think.
   */
  thinking?: { budgetTokens?: number; byRole?: Record<string, { budgetTokens: number } | null> };
}

/** The thinking an agent of `role` gets from the goal's options. */
export function thinkingFor(options: Pick<GoalOptions, 'thinking'>, role: string): { budgetTokens: number } | undefined {
  const byRole = options.thinking?.byRole;
  if (byRole !== undefined && Object.hasOwn(byRole, role)) return byRole[role] ?? undefined;
  const budget = options.thinking?.budgetTokens;
  return budget !== undefined ? { budgetTokens: budget } : undefined;
}

export interface GoalTaskReport extends Task {
  /** Evidence of the last attempt: files changed, commands and exit codes, the agent's summary. */
  details: TaskEvidence | null;
}

export interface GoalResult {
  goalId: string;
  verdict: GoalReport['verdict'];
  /** The critic's summary when the goal is met; why it stopped otherwise. */
  summary: string;
  tasks: GoalTaskReport[];
  reviews: Review[];
  usage: Usage;
  /** USD spent (calls of unknown price are counted in usage.unpricedCalls, not here). */
  cost: number;
  exhaustion: GoalReport['exhaustion'];
  planVersion: number;
}

const DEFAULT_MODEL = 'claude-sonnet-4-6';

export async function goalWorkflow(options: GoalOptions): Promise<GoalResult> {
  parseStartInput(goalOptionsSchema, options, 'goal');
  const goalId = workflowInfo().workflowId;
  const stream = new WorkflowStream();
  const events = stream.topic<GoalLogEntry>(EVENTS_TOPIC);
  const timers = new Timers();
  const storeDir = options.storeDir ?? `${options.workspace.replace(/\/+$/, '')}/.keel/store`;
  const model = options.model ?? DEFAULT_MODEL;
  const maxTokens = options.maxTokens ?? 4096;
  let seq = 0;
  let done: GoalReport | null = null;
  let tools: ToolEntry[] = [];
  let toolsRef: string | null = null;
  let policy: PolicyConfig | null = null;
  /** The last plan the model proposed: shown to it again with the errors. */
  let lastProposal: unknown = null;
  let modelCalls = 0;
  const modelScopes = new Map<string, CancellationScope>();
  /** Running child agents by agent id. */
  const children = new Map<string, { taskId: string; attempt: number; scope: CancellationScope; token: string; evidence: TaskEvidence | null }>();
  /** What each finished (or lost) attempt did, by task: the next attempt's agent is told. */
  const attempts = new Map<string, AttemptRecord[]>();
  const agentUsage: Record<string, Usage> = {};
  const agentApprovals = new Map<string, GoalPendingApproval[]>();
  const evidence: Record<string, TaskEvidence> = {};

  const now = () => Date.now();
  const publish = (event: LogEvent | GoalRunnerEvent) => {
    const at = new Date(now()).toISOString();
    events.publish({ ...preview(event), seq: seq++, at, workflowId: goalId });
    reportEvent(event, at);
  };
  const rejected = (source: string, error: TransitionError) => {
    publish({ kind: 'event.rejected', source, machine: error.machine, state: error.state, event: error.event, code: error.code, message: error.message });
  };
  const queue = new SerialQueue(() => report());

  // ---- the autonomy machine ----------------------------------------------------------
  const created = createGoal({
    goalId,
    goal: options.goal,
    ...(options.autoApprove !== undefined ? { autoApprove: options.autoApprove } : {}),
    ...(options.maxConcurrency !== undefined ? { maxConcurrency: options.maxConcurrency } : {}),
    ...(options.maxTaskAttempts !== undefined ? { maxTaskAttempts: options.maxTaskAttempts } : {}),
    ...(options.maxPlanAttempts !== undefined ? { maxPlanAttempts: options.maxPlanAttempts } : {}),
    ...(options.maxReviewCycles !== undefined ? { maxReviewCycles: options.maxReviewCycles } : {}),
    planApprovalTimeoutMs: options.planApprovalTimeoutMs ?? null,
    ...(options.limits !== undefined ? { limits: options.limits } : {}),
  });
  let goal: GoalState = created.state;

  function apply(event: GoalEvent): ReturnType<typeof goalMachine.transition> {
    const result = goalMachine.transition(goal, event);
    if (!result.ok) return result;
    goal = result.state;
    for (const directive of result.directives) execute(directive);
    return result;
  }
  function applyOrRecord(source: string, event: GoalEvent): void {
    const result = apply(event);
    if (!result.ok) rejected(source, result.error);
  }

  function execute(d: GoalDirective): void {
    switch (d.type) {
      case 'emit_event':
        publish(d.event);
        return;
      case 'start_timer':
        timers.start(d.timerId, d.durationMs, () => queue.post(() => applyOrRecord(`timer ${d.timerId}`, { type: 'timer_fired', timerId: d.timerId })), now());
        return;
      case 'cancel_timer':
        timers.cancel(d.timerId);
        return;
      case 'request_plan':
        requestPlan(d.attempt, d.feedback, d.errors);
        return;
      case 'request_plan_approval':
        // Surfaced by the state and plan queries, KeelStatus and the plan.approval_requested event.
        return;
      case 'start_child_agent':
        startAgent(d);
        return;
      case 'cancel_child_agent':
        children.get(d.agentId)?.scope.cancel();
        return;
      case 'request_review':
        requestReview(d.cycle, [], 1);
        return;
      case 'complete':
        done = d.report;
        return;
      default: {
        const never: never = d;
        throw new Error(`unknown goal directive ${JSON.stringify(never)}`);
      }
    }
  }

  // ---- planner and critic: model calls that must answer through a tool -----------------
  function callTool(name: string, system: string, prompt: string, tool: typeof submitPlanTool): Promise<{ input: unknown; usage: CallUsage }> {
    const activityId = `${name}-${++modelCalls}`;
    const overrides = options.modelActivity ?? {};
    const callModelAs = (id: string) =>
      proxyActivities<ModelActivities>({
        ...MODEL_ACTIVITY_OPTIONS,
        ...overrides,
        // As in the turn (workflows/turn-runner.ts): Temporal retries only a lost attempt;
        // every other failure comes back here with what it was billed for.
        retry: { ...MODEL_ACTIVITY_OPTIONS.retry, ...overrides.retry, maximumAttempts: 2 },
        activityId: id,
      }).callModel;
    const scope = new CancellationScope();
    modelScopes.set(activityId, scope);
    const request: ModelCallInput = {
      callId: activityId,
      serverRetries: 'timeouts_only',
      model,
      maxTokens,
      system,
      tools: [tool as unknown as NonNullable<ModelCallInput['tools']>[number]],
      toolChoice: { type: 'tool', name },
      conversation: { kind: 'inline', messages: [{ role: 'user', content: prompt }] },
    };
    // One tier of retries, here, by the rule in machines/answer-retry.ts.
    const call = scope.run(async () => {
      for (let round = 1; ; ) {
        const id = round === 1 ? activityId : `${activityId}-round-${round}`;
        try {
          return await callModelAs(id)({ ...request, callId: id });
        } catch (error) {
          if (isCancellation(error)) throw error;
          const decided = afterFailedRound(round, modelFailure(error));
          if (decided.spent !== null) countSpent(name, decided.spent);
          if (decided.next.type === 'give_up') throw error;
          await sleep(decided.next.delayMs);
          round = decided.next.round;
        }
      }
    });
    const forget = () => modelScopes.delete(activityId);
    call.then(forget, forget);
    return call.then((result) => ({ input: toolInput(result, name), usage: callUsage(result) }));
  }

  /** What a failed or unusable answer was billed for counts like any other spend (issue [3/7]). */
  function countSpent(name: string, usage: Usage): void {
    if (goalMachine.isTerminal(goal)) return;
    applyOrRecord(name === SUBMIT_PLAN ? 'planner' : 'critic', { type: 'usage_reported', usage });
  }

  function requestPlan(attempt: number, feedback: string | null, errors: readonly string[]): void {
    const prompt = planPrompt(goal, { attempt, feedback, errors, previous: lastProposal });
    callTool(SUBMIT_PLAN, PLANNER_SYSTEM, prompt, submitPlanTool).then(
      ({ input, usage }) =>
        queue.post(() => {
          lastProposal = input;
          const parsed = submitPlanSchema.safeParse(input);
          // A plan of the wrong shape still goes to the machine, which names each problem.
          const tasks = parsed.success ? toTaskInputs(parsed.data.tasks) : looseTasks(input);
          applyOrRecord('planner', { type: 'plan_proposed', tasks, usage });
        }),
      (error: unknown) => {
        if (isCancellation(error)) return;
        queue.post(() => applyOrRecord('planner', { type: 'model_failed', error: failureMessage(error) }));
      },
    );
  }

  /** The critic; an answer the machine cannot take goes back to it with the reason (bounded). */
  function requestReview(cycle: number, errors: readonly string[], attempt: number): void {
    callTool(SUBMIT_REVIEW, CRITIC_SYSTEM, reviewPrompt(goal, cycle, errors), submitReviewTool).then(
      ({ input, usage }) =>
        queue.post(() => {
          const parsed = submitReviewSchema.safeParse(input);
          let problems: string[];
          if (parsed.success) {
            const { verdict, findings, tasks } = parsed.data;
            const result = apply({ type: 'review_done', verdict, findings, ...(tasks ? { tasks: toTaskInputs(tasks) } : {}), usage });
            if (result.ok) return;
            rejected('critic', result.error);
            problems = [result.error.message];
          } else {
            problems = shapeProblems(parsed.error);
          }
          const decided = afterUnusableAnswer(attempt, goal.config.maxPlanAttempts, problems, usage);
          countSpent(SUBMIT_REVIEW, decided.spent);
          if (decided.next.type === 'ask_again') {
            if (goal.status === 'reviewing') requestReview(cycle, decided.next.errors, decided.next.attempt);
            return;
          }
          if (goal.status === 'reviewing') applyOrRecord('critic', { type: 'model_failed', error: decided.next.error });
        }),
      (error: unknown) => {
        if (isCancellation(error)) return;
        queue.post(() => applyOrRecord('critic', { type: 'model_failed', error: failureMessage(error) }));
      },
    );
  }

  // ---- task agents ------------------------------------------------------------------------
  function startAgent(d: Extract<GoalDirective, { type: 'start_child_agent' }>): void {
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
    children.set(d.agentId, { taskId: d.taskId, attempt: d.attempt, scope, token, evidence: null });
    const earlier = attempts.get(d.taskId) ?? [];
    const input: AgentInput = {
      goalId,
      goal: options.goal,
      taskId: d.taskId,
      attempt: d.attempt,
      title: d.title,
      instructions: d.instructions,
      role: d.role,
      workspace: options.workspace,
      storeDir,
      model,
      maxTokens,
      // The definitions are in the store (toolsRef): the agent needs only names and options,
      // so each child's start event stays small.
      tools: toolsRef === null ? tools : tools.map((t) => ({ ...t, spec: { name: t.spec.name, description: '', input_schema: { type: 'object' } } })),
      toolsRef,
      policy: policy ?? defaultPolicy,
      headless: options.headless ?? false,
      limits: { ...remainingForTurn(goal.config.limits, goal.usage), maxSteps: options.maxStepsPerTask ?? 25 },
      approvalTimeoutMs: options.approvalTimeoutMs ?? null,
      maxParallelTools: options.maxParallelTools ?? 4,
      retryBackoffMs: options.retryBackoffMs,
      modelActivity: options.modelActivity,
      thinking: thinkingFor(options, d.role),
      reportToken: token,
      ...(earlier.length > 0 ? { earlierAttempts: describeAttempts(earlier) } : {}),
    };
    const source = `agent ${d.agentId}`;
    scope
      .run(async () => {
        const child = await startChild(agentWorkflow, {
          workflowId: d.agentId,
          args: [input],
          staticSummary: `task ${d.taskId} (attempt ${d.attempt}): ${d.title}`,
        });
        queue.post(() => applyOrRecord(source, { type: 'task_started', taskId: d.taskId, attempt: d.attempt }));
        return child.result();
      })
      .then(
        (result: AgentResult) =>
          queue.post(() => {
            finishAgent(d.agentId);
            evidence[d.taskId] = result.evidence;
            remember(d.taskId, d.attempt, `${result.outcome}: ${result.summary}`, result.evidence);
            // Usage the agent reported is counted; the rest (usually nothing) comes with the result.
            const unreported = usageSince(agentUsage[d.agentId] ?? ZERO_USAGE, result.usage);
            agentUsage[d.agentId] = result.usage;
            applyOrRecord(source, {
              type: 'task_finished',
              taskId: d.taskId,
              attempt: d.attempt,
              outcome: result.outcome,
              result: result.summary,
              evidence: describeEvidence(result.evidence),
              ...(unreported !== null ? { usage: unreported } : {}),
              agentUsage: result.usage,
            });
          }),
        (error: unknown) =>
          queue.post(() => {
            const lost = children.get(d.agentId);
            finishAgent(d.agentId);
            // What it reported before it failed is all the goal knows of what it did.
            const seen = lost?.evidence ?? { filesChanged: [], commands: [], summary: null };
            remember(d.taskId, d.attempt, isCancellation(error) ? 'cancelled before it finished' : `failed: ${failureMessage(error)}`, seen);
            // Cancelled by this goal: the machine already counted the task as cancelled.
            if (isCancellation(error) && scope.consideredCancelled) return;
            applyOrRecord(source, { type: 'task_finished', taskId: d.taskId, attempt: d.attempt, outcome: 'failed', result: failureMessage(error) });
          }),
      );
  }

  function remember(taskId: string, attempt: number, ended: string, e: TaskEvidence): void {
    const list = attempts.get(taskId) ?? [];
    list.push({ attempt, ended, filesChanged: e.filesChanged, commands: e.commands });
    attempts.set(taskId, list.slice(-5));
  }

  /** The agent is gone, and its approvals with it. */
  function finishAgent(agentId: string): void {
    children.delete(agentId);
    agentApprovals.delete(agentId);
  }

  /** An agent's cumulative usage: what is new since its last report counts against the budget. */
  function countUsage(agentId: string, total: Usage): void {
    const delta = usageSince(agentUsage[agentId] ?? ZERO_USAGE, total);
    if (delta === null) return;
    agentUsage[agentId] = { ...total };
    if (!goalMachine.isTerminal(goal)) applyOrRecord(`agent ${agentId}`, { type: 'usage_reported', usage: delta });
  }

  // ---- setup: tools and policy once, for every agent ------------------------------------
  function initialize(): void {
    const { listTools, loadPolicy } = proxyActivities<ToolActivities>({ startToCloseTimeout: '1 minute', retry: { maximumAttempts: 3 } });
    const { storeSegment } = proxyActivities<StoreActivities>({ startToCloseTimeout: '1 minute', retry: { maximumAttempts: 5 } });
    void (async () => {
      const [builtin, loaded] = await Promise.all([
        listTools(),
        loadPolicy({ workspace: options.workspace, ...(options.policy !== undefined ? { options: options.policy } : {}) }),
      ]);
      if (!loaded.ok) return { ok: false as const, error: loaded.error };
      // Nobody talks to a task agent directly, so it gets no ask_user; it ends with finish_task.
      const entries: ToolEntry[] = [
        ...builtin.filter((t) => t.spec.name !== 'ask_user').map((t) => ({ spec: t.spec, readOnly: t.readOnly, activityOptions: t.activityOptions })),
        { spec: finishTaskTool, readOnly: false },
      ];
      const ref = await storeSegment({ store: storeDir, parent: null, items: entries.map((t) => t.spec) });
      return { ok: true as const, policy: loaded.policy, tools: entries, toolsRef: ref };
    })().then(
      (r) =>
        queue.post(() => {
          if (!r.ok) return applyOrRecord('initialize', { type: 'cancel', reason: `cannot start: ${r.error}` });
          policy = r.policy;
          tools = r.tools;
          toolsRef = r.toolsRef;
          applyOrRecord('initialize', { type: 'decompose' });
        }),
      (error: unknown) => queue.post(() => applyOrRecord('initialize', { type: 'cancel', reason: `cannot start: ${failureMessage(error)}` })),
    );
  }

  // ---- what people see ------------------------------------------------------------------
  let reported = '';
  const pending = (): GoalPendingApproval[] => [...agentApprovals.values()].flat();
  function report(): void {
    const waiting = pending();
    const u = goal.usage;
    const running = goal.tasks.filter((t) => t.status === 'running').map((t) => t.id);
    setCurrentDetails(
      [
        `**${escapeMarkdown(goal.status)}**${reasonOf(goal) ? ` (${escapeMarkdown(reasonOf(goal) ?? '')})` : ''} · plan v${goal.planVersion} · ${goal.tasks.filter((t) => t.status === 'succeeded').length}/${goal.tasks.length} tasks done`,
        running.length > 0 ? `running: ${running.map(code).join(', ')}` : '',
        `usage: ${u.inputTokens} in / ${u.outputTokens} out tokens, $${u.costUsd.toFixed(4)}`,
        waiting.length > 0 ? `waiting for approval: ${waiting.map((p) => `${code(p.name)} (${code(p.callId)}, task ${code(p.taskId)})`).join(', ')}` : '',
      ]
        .filter((l) => l !== '')
        .join('\n\n'),
    );
    const key = `${goal.status}|${waiting.length}`;
    if (key === reported) return;
    reported = key;
    upsertSearchAttributes([
      { key: KeelStatus, value: goal.status },
      { key: KeelPendingApprovals, value: waiting.length },
    ]);
  }
  const usageView = (): GoalUsageView => ({
    usage: goal.usage,
    limits: goal.config.limits,
    agents: { ...agentUsage },
    exhaustion: goal.status === 'stopped' ? goal.exhaustion : findExhaustion(goal.config.limits, { usage: goal.usage }),
  });

  // ---- signals and updates ----------------------------------------------------------------
  const mustAccept = (event: GoalEvent) => {
    const r = goalMachine.transition(goal, event);
    if (!r.ok) throw new Error(r.error.message);
  };
  const status = (): GoalControlResult => ({ status: goal.status });
  const signalled = (name: string, build: () => GoalEvent) =>
    queue.post(() => {
      let event: GoalEvent;
      try {
        event = build();
      } catch (error) {
        rejected(`signal ${name}`, { code: 'guard_failed', machine: 'autonomy', state: goal.status, event: name, message: (error as Error).message });
        return;
      }
      applyOrRecord(`signal ${name}`, event);
    });
  const updated = (name: string, event: GoalEvent): GoalControlResult => {
    queue.post(() => applyOrRecord(`update ${name}`, event));
    return status();
  };
  const controls: [string, { name: string }, { name: string }, (raw: unknown) => GoalEvent][] = [
    ['approvePlan', approvePlanSignal, approvePlanUpdate, (raw) => (parse(noPayloadSchema, raw, 'approvePlan'), { type: 'approve_plan' })],
    ['rejectPlan', rejectPlanSignal, rejectPlanUpdate, (raw) => ({ type: 'reject_plan', feedback: parse(rejectPlanSchema, raw, 'rejectPlan').feedback })],
    [
      'resolveTask',
      resolveTaskSignal,
      resolveTaskUpdate,
      (raw) => {
        const r = parse(resolveTaskSchema, raw, 'resolveTask');
        return { type: 'resolve_task', taskId: r.taskId, action: r.action, ...(r.instructions !== undefined ? { instructions: r.instructions } : {}) };
      },
    ],
    [
      'cancel',
      cancelSignal,
      cancelUpdate,
      (raw) => {
        const r = parse(reasonSchema, raw, 'cancel');
        return { type: 'cancel', ...(r?.reason ? { reason: r.reason } : {}) };
      },
    ],
  ];
  for (const [name, signal, update, build] of controls) {
    setHandler(signal as typeof cancelSignal, (raw?: unknown) => signalled(name, () => build(raw)));
    setHandler(update as typeof cancelUpdate, (raw?: unknown) => updated(name, build(raw)), { validator: (raw?: unknown) => mustAccept(build(raw)) });
  }

  // approve / deny: the agent whose call it is gets the signal.
  const findCall = (callId: string): GoalPendingApproval => {
    const call = pending().find((p) => p.callId === callId);
    if (call) return call;
    const waiting = pending().map((p) => p.callId);
    throw new Error(`unknown call id ${callId}: ${waiting.length === 0 ? 'no tool call is waiting for approval' : `waiting for approval: ${waiting.join(', ')}`}`);
  };
  const forward = async (kind: 'approve' | 'deny', raw: unknown): Promise<GoalControlResult & { callId: string; agentId: string }> => {
    const input = kind === 'approve' ? parse(approveSchema, raw, 'approve') : parse(denySchema, raw, 'deny');
    const call = findCall(input.callId);
    const child = getExternalWorkflowHandle(call.agentId);
    publish({ kind: 'agent.approval_answered', agentId: call.agentId, taskId: call.taskId, callId: call.callId, decision: kind === 'approve' ? 'approved' : 'denied' });
    if (kind === 'approve') await child.signal(approveSignal, input);
    else await child.signal(denySignal, input);
    return { status: goal.status, callId: call.callId, agentId: call.agentId };
  };
  const forwardSignal = (kind: 'approve' | 'deny') => (raw: unknown) => {
    forward(kind, raw).catch((error: unknown) =>
      rejected(`signal ${kind}`, { code: 'guard_failed', machine: 'turn', state: goal.status, event: kind, message: failureMessage(error) }),
    );
  };
  setHandler(approveSignal, forwardSignal('approve'));
  setHandler(denySignal, forwardSignal('deny'));
  setHandler(goalApproveUpdate, (raw) => forward('approve', raw), { validator: (raw) => void findCall(parse(approveSchema, raw, 'approve').callId) });
  setHandler(goalDenyUpdate, (raw) => forward('deny', raw), { validator: (raw) => void findCall(parse(denySchema, raw, 'deny').callId) });

  // ---- queries -------------------------------------------------------------------------------
  setHandler(goalPendingApprovalsQuery, () => pending());
  setHandler(goalUsageQuery, () => usageView());
  setHandler(planQuery, () => ({ planVersion: goal.planVersion, status: goal.status, tasks: goal.tasks, evidence: { ...evidence } }));
  setHandler(goalStateQuery, (): GoalStateView => ({
    goalId,
    status: goal.status,
    reason: reasonOf(goal),
    goal,
    running: [...children].map(([agentId, c]) => ({ agentId, taskId: c.taskId })),
    pendingApprovals: pending(),
    usage: usageView(),
    nextEventSeq: seq,
  }));
  setHandler(goalEventsQuery, (raw) => eventsPage<GoalLogEntry>(stream, parse(transcriptQuerySchema, raw, 'events') ?? {}, seq));

  // Registered here, after `pending` and `report` exist: a report buffered before the
  // first activation is delivered as soon as its handler is set.
  setHandler(agentReportSignal, (raw: unknown) =>
    queue.post(() => {
      const refuse = (message: string) =>
        rejected('signal agentReport', { code: 'guard_failed', machine: 'autonomy', state: goal.status, event: 'agentReport', message });
      // Goals whose history predates the token replay as they ran (their agents sent none).
      const checked = patched('agent-report-token');
      let r: ReturnType<typeof agentReportSchema.parse>;
      try {
        r = parse(checked ? agentReportSchema : agentReportSchema.extend({ token: agentReportSchema.shape.token.optional() }), raw, 'agentReport') as typeof r;
      } catch (error) {
        return refuse((error as Error).message);
      }
      const child = children.get(r.agentId);
      if (!checked) {
        if (!child) return countUsage(r.agentId, r.usage);
      } else if (!child || child.token !== r.token || child.taskId !== r.taskId || child.attempt !== r.attempt) {
        // One message for every mismatch: a forger learns nothing about which part was wrong.
        return refuse(`report not from a running agent of this goal (agent ${r.agentId.slice(0, 200)})`);
      }
      if (r.evidence) child.evidence = r.evidence;
      const before = new Set((agentApprovals.get(r.agentId) ?? []).map((p) => p.callId));
      for (const p of r.pendingApprovals) {
        if (before.has(p.callId)) continue;
        publish({ kind: 'agent.approval_requested', agentId: r.agentId, taskId: r.taskId, callId: p.callId, toolName: p.name, input: p.input, reason: p.reason });
      }
      agentApprovals.set(r.agentId, r.pendingApprovals.map((p) => ({ ...p, agentId: r.agentId, taskId: r.taskId })));
      countUsage(r.agentId, r.usage);
    }),
  );

  // Unknown names: recorded / refused. After every named handler (a default handler takes what is buffered).
  setDefaultSignalHandler((name) => queue.post(() => publish(unknownSignal('autonomy', goal.status, name, GOAL_SIGNALS))));
  setDefaultUpdateHandler((name) => rejectUnknownUpdate(name, GOAL_SIGNALS.filter((n) => n !== 'agentReport')));

  // ---- run ---------------------------------------------------------------------------------------
  upsertSearchAttributes([
    { key: KeelKind, value: 'goal' },
    { key: KeelWorkspace, value: options.workspace },
  ]);
  queue.post(() => {
    for (const d of created.directives) execute(d);
    initialize();
  });

  try {
    await condition(() => done !== null);
  } catch (error) {
    if (!isCancellation(error)) throw error;
    // Cancelled through Temporal: the same as the cancel signal (the children are already being cancelled).
    await CancellationScope.nonCancellable(async () => {
      queue.post(() => applyOrRecord('workflow cancel', { type: 'cancel', reason: 'the workflow was cancelled' }));
      await condition(() => done !== null);
    });
  }
  await CancellationScope.nonCancellable(async () => {
    // A planner or critic still talking is no longer needed; cancelled agents confirm that they stopped.
    for (const scope of modelScopes.values()) scope.cancel();
    await condition(() => children.size === 0 && modelScopes.size === 0);
    report();
    stream.detachPollers();
    await condition(allHandlersFinished);
  });

  const final = done as unknown as GoalReport;
  return {
    goalId,
    verdict: final.verdict,
    summary: final.reason,
    tasks: final.tasks.map((t) => ({ ...t, details: evidence[t.id] ?? null })),
    reviews: [...final.reviews],
    usage: final.usage,
    cost: final.usage.costUsd,
    exhaustion: final.exhaustion,
    planVersion: goal.planVersion,
  };
}

/** An error the activity's own retries gave up on that a later round may not see again. */
function reasonOf(goal: GoalState): string | null {
  if (goal.status === 'stopped') return goal.reason;
  if (goal.status === 'goal_met') return goal.summary;
  if (goal.status === 'blocked') return `tasks failed: ${goal.taskIds.join(', ')}`;
  return null;
}

/** What `total` adds to `before`, or null when nothing. */
function usageSince(before: Usage, total: Usage): Usage | null {
  const delta: Usage = {
    inputTokens: Math.max(0, total.inputTokens - before.inputTokens),
    outputTokens: Math.max(0, total.outputTokens - before.outputTokens),
    costUsd: Math.max(0, total.costUsd - before.costUsd),
    unpricedCalls: Math.max(0, total.unpricedCalls - before.unpricedCalls),
  };
  return delta.inputTokens + delta.outputTokens + delta.costUsd + delta.unpricedCalls === 0 ? null : delta;
}

function toolInput(result: ModelCallResult, name: string): unknown {
  for (const block of result.message.content) if (block.type === 'tool_use' && block.name === name) return block.input;
  return null;
}

function callUsage(result: ModelCallResult): CallUsage {
  const u = result.usage;
  return {
    inputTokens: u.input_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0),
    outputTokens: u.output_tokens,
    costUsd: result.cost?.total ?? null,
  };
}

/** Tasks from an answer that does not have the tool's shape, as they are, for the machine to judge. */
function looseTasks(input: unknown): TaskInput[] {
  const tasks = (input as { tasks?: unknown } | null)?.tasks;
  if (!Array.isArray(tasks)) return [];
  return tasks.map((t: unknown, i) => {
    const o = (typeof t === 'object' && t !== null ? t : {}) as Record<string, unknown>;
    const { acceptance, ...rest } = o;
    const instructions = typeof rest.instructions === 'string' && typeof acceptance === 'string' ? `${rest.instructions}\n\nAcceptance check: ${acceptance}` : rest.instructions;
    return { ...rest, id: typeof rest.id === 'string' ? rest.id : `#${i + 1}`, instructions } as never;
  });
}

function describeEvidence(e: TaskEvidence): string[] {
  return [
    ...e.filesChanged.map((f) => `file changed: ${f}`),
    ...e.commands.map((c) => `command: ${c.command} → ${c.exitCode === null ? c.status : `exit code ${c.exitCode}`}`),
  ];
}
