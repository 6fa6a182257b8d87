// The goal workflow: the autonomy loop (seed 002; SPEC §2). The `autonomy` machine decides
// everything — when to plan, whether a plan is valid, which tasks start, when to review,
// when to stop; this workflow applies events to it on the machine host (workflows/host.ts)
// and executes its directives: the planner and the critic as model calls that must answer
// through a tool (workflows/goal-model.ts), each task attempt as a child agent workflow
// (workflows/goal-agents.ts), timers, the event log. A goal continues as new at quiet
// points: once a new run is wanted, the directives that would start work (agents, planner,
// critic) wait for the next run, and the goal hands over when nothing is running.
import { CancellationScope, condition, isCancellation, makeContinueAsNewFunc, setHandler, workflowInfo } from '@temporalio/workflow';
import { addUsage, ZERO_USAGE } from '../machines/budget';
import { createGoal, goalMachine, type GoalDirective, type GoalEvent, type GoalReport, type GoalState, type LogEvent } from '../machines/index';
import type { PolicyConfig, PolicyOrigin } from '../machines/policy';
import { agentReportSignal, GOAL_SIGNALS, goalOptionsSchema, type GoalLogEntry, type GoalRunnerEvent } from './definitions';
import { failureMessage, parseStartInput } from './payloads';
import type { ToolEntry } from './turn-runner';
import { MachineHost, type Driven, type HostCarry } from './host';
import { AgentPool, type AgentCarry } from './goal-agents';
import { Advisors, ToolCaller } from './goal-model';
import { appendStreamTail } from './model-stream';
import { goalControls } from './goal-controls';
import { goalDetails, goalQueries } from './goal-views';
import { resolveGoalOptions, type GoalResult } from './goal-options';
import type { GoalOptions } from './protocol/goal';
import { loadSetupWaiting } from './setup';
import { InfraWaiter } from './infra-wait';
import { WaitingAttribute } from './waiting-attribute';
import { infraWaitingKey } from '../machines/infra-retry';
import { sleep } from '@temporalio/workflow';
import { WorkspaceRouting } from './workspace-host';
import { hostMoveHandler } from './host-move';
import { listenForUpgradeNudge, upgradeOnContinue } from './versioning';
import { hasPatch, stampedMemo } from './run-format';
import { scheduleGate } from './schedule-gate';
import { withinMonthlyBudget } from '../machines/schedule-budget';
import { GoalCheckpoints, type GoalCheckpointCarry } from './goal-checkpoints';

export { thinkingFor } from './goal-agents';
export type { GoalResult, GoalTaskReport, ResolvedGoalOptions } from './goal-options';
export type { GoalOptions } from './protocol/goal';

/** What one run hands the next through continue-as-new (at a quiet point: no agent, planner or critic running). */
export interface GoalCarry extends HostCarry {
  goal: unknown;
  agents: AgentCarry;
  tools: ToolEntry[];
  toolsRef: string | null;
  /** The identity of the conversation store the goal started on (its agents check it). */
  storeId?: string | undefined;
  policy: PolicyConfig | null;
  policyOrigin?: PolicyOrigin | null | undefined;
  lastProposal: unknown;
  modelCalls: number;
  /** Directives the machine gave while the run was handing over: the next run executes them. */
  deferred: GoalDirective[];
  run: number;
  /** Its fork points (goals started with checkpoints: workflows/goal-checkpoints.ts). */
  checkpoints?: GoalCheckpointCarry | undefined;
}

/** Goals that ran before continue-as-new existed replay as they ran. */
const CONTINUE_PATCH = 'goal-continue-as-new';
/** From this marker on, the critic's follow-up tasks wait for plan approval (machines/autonomy/). */
const FOLLOW_UP_APPROVAL_PATCH = 'goal-follow-ups-need-plan-approval';

export async function goalWorkflow(input: GoalOptions, carry?: GoalCarry): Promise<GoalResult> {
  parseStartInput(goalOptionsSchema, input, 'goal');
  // Every default filled in once: this run (its planner, critic and agents) uses these, and hands them to the next one.
  const resolved = resolveGoalOptions(input);
  // A run of a Keel schedule first reads what the schedule's runs spent this month (a continued run passed this already):
  // spent, it stops before calling any model; else its own cost limit is at most what is left.
  const gate = resolved.schedule !== undefined && carry === undefined ? await scheduleGate(resolved.schedule) : null;
  const options = gate === null ? resolved : { ...resolved, limits: withinMonthlyBudget(resolved.limits, gate) };
  const { storeDir, model, maxTokens } = options;
  let done: GoalReport | null = null;
  let tools: ToolEntry[] = carry?.tools ?? [];
  let toolsRef: string | null = carry?.toolsRef ?? null;
  let storeId: string | undefined = carry?.storeId;
  // A workspace on one host's disk: setup and the agents' tools run there (workspace-host.ts).
  // An operator may move it to another host (`keel host move`, workflows/host-move.ts): agents started later go there.
  const routing = new WorkspaceRouting(workflowInfo().taskQueue, options.workspaceHost, options.workspaceHostWaitMs);
  let policy: PolicyConfig | null = carry?.policy ?? null;
  let policyOrigin: PolicyOrigin | null = carry?.policyOrigin ?? null;
  let ready = carry !== undefined;
  /** Set once a new run is wanted: work-starting directives wait in `deferred`. */
  let handingOver = false;
  // After each report, and on a deploy's nudge (a goal waiting for a human has no reports).
  const considerHandover = () => {
    if (!handingOver && ready && !goalMachine.isTerminal(goal.state) && wantsNewRun()) handingOver = hasPatch(CONTINUE_PATCH);
  };
  const deferred: GoalDirective[] = [];
  const run = (carry?.run ?? 0) + 1;

  const host: MachineHost<GoalLogEntry, LogEvent | GoalRunnerEvent> = new MachineHost<GoalLogEntry, LogEvent | GoalRunnerEvent>({
    kind: 'goal',
    workspace: options.workspace,
    idField: 'workflowId',
    signals: GOAL_SIGNALS.filter((n) => n !== 'agentReport'),
    carry,
    view: () => ({ details: goalDetails({ goal, agents, waiting: () => setupWait.waiting }), status: goal.state.status, pendingApprovals: agents.pending().length }),
    // The planner's and critic's calls stream to the goal's own `model` topic.
    live: () => [...models.scopes.keys()],
    afterReport: () => considerHandover(),
    // Each plan version is recorded with the workspace then (a fork point).
    tap: (event) => checkpoints.tap(event),
  });
  const goalId = host.workflowId;
  // KeelWaiting: what the goal's setup waits out (its agents show their own).
  const waitingAttribute = new WaitingAttribute(() => infraWaitingKey(setupWait.current));
  const setupWait = new InfraWaiter({ now: host.now, emit: host.publish, changed: () => waitingAttribute.refresh() });
  const models = new ToolCaller({ model, maxTokens, modelActivity: options.modelActivity, retryBackoffMs: options.retryBackoffMs, calls: carry?.modelCalls, streamTail: (tail) => appendStreamTail(host.stream, tail) });
  const advisors: Advisors = new Advisors(models, { goal: () => goal, post: host.post, rejected: host.rejected }, carry?.lastProposal ?? null);
  const agents: AgentPool = new AgentPool(
    {
      goalId,
      options,
      goal: () => goal.state,
      setup: () => ({ tools, toolsRef, policy, storeId }),
      workspaceHost: () => routing.host,
      publish: host.publish,
      refuse: (source, machine, event, message) => host.rejected(source, { code: 'guard_failed', machine, state: goal.state.status, event, message }),
      post: host.post,
      record: (source, event) => goal.record(source, event),
      agentInput: () => checkpoints.agentInput(),
      attemptEnded: (a) => checkpoints.attemptEnded(a),
    },
    // A fork's first run knows what its kept tasks' agents reported (their files and commands).
    carry?.agents ?? (options.forkOf?.details !== undefined ? { attempts: {}, usage: {}, evidence: { ...options.forkOf.details } } : undefined),
  );
  // ---- fork points: the workspace at the start, at each plan version and each task's end (workflows/goal-checkpoints.ts) ----
  const checkpoints = new GoalCheckpoints(
    { options, route: () => routing.route, storeId: () => storeId, policy: () => policy, tasks: () => goal.state.tasks, now: host.now, post: host.post, publish: host.publish },
    carry?.checkpoints,
    carry === undefined,
  );

  // ---- the autonomy machine and its directives ------------------------------------------------
  const created = carry
    ? { state: goalMachine.fromJSON(carry.goal), directives: [] }
    : createGoal({
        goalId,
        goal: options.goal,
        autoApprove: options.autoApprove,
        maxConcurrency: options.maxConcurrency,
        maxTaskAttempts: options.maxTaskAttempts,
        maxPlanAttempts: options.maxPlanAttempts,
        maxReviewCycles: options.maxReviewCycles,
        maxTasks: options.maxTasks,
        planApprovalTimeoutMs: options.planApprovalTimeoutMs,
        limits: options.limits,
        // Goals recorded before follow-ups needed plan approval replay as they ran.
        ...(hasPatch(FOLLOW_UP_APPROVAL_PATCH) ? { followUpsNeedApproval: true } : {}),
      });
  const goal: Driven<GoalState, GoalEvent, GoalDirective> = host.drive(goalMachine, created.state, execute);

  // When a new run is wanted, and when it may start (declared before any handler can run).
  const wantsNewRun = () => MachineHost.wantsNewRun(options.continueAsNewWhenSuggested, options.continueAsNewAfterEvents);
  const quiet = () => handingOver && agents.children.size === 0 && !models.busy;

  function execute(d: Exclude<GoalDirective, { type: 'emit_event' | 'start_timer' | 'cancel_timer' }>): void {
    if (handingOver && (d.type === 'request_plan' || d.type === 'start_child_agent' || d.type === 'request_review')) {
      deferred.push(d);
      return;
    }
    switch (d.type) {
      case 'request_plan':
        return advisors.plan(d.attempt, d.feedback, d.errors);
      case 'request_plan_approval':
        // Surfaced by the state and plan queries, KeelStatus and the plan.approval_requested event.
        return;
      case 'start_child_agent':
        return agents.start(d);
      case 'cancel_child_agent': {
        // Not started yet: it never will be (the machine counted the task as cancelled).
        const waiting = deferred.findIndex((w) => w.type === 'start_child_agent' && w.agentId === d.agentId);
        if (waiting >= 0) deferred.splice(waiting, 1);
        return agents.cancel(d.agentId);
      }
      case 'request_review':
        return advisors.review(d.cycle, [], 1);
      case 'complete':
        done = d.report;
        return;
      default: {
        const never: never = d;
        throw new Error(`unknown goal directive ${JSON.stringify(never)}`);
      }
    }
  }

  // ---- setup: tools and policy once, for every agent ---------------------------------------------
  /**
   * Setup that waits: out a store or host that is away (loadSetupWaiting), and for a human
   * to fix what failed for good (a policy file, the store's configuration) — tried again on
   * the infrastructure table's backoff, the reason shown, until its horizon; then the goal stops.
   */
  async function setUp(): Promise<Awaited<ReturnType<typeof loadSetupWaiting>>> {
    for (;;) {
      const r = await loadSetupWaiting({ workspace: options.workspace, storeDir, policy: options.policy, for: { kind: 'agents' }, route: () => routing.route, model: options.model }, setupWait);
      if (r.ok || r.permanent !== true) return r;
      const decision = setupWait.failed('file system', `workspace ${options.workspace}`, `setup failed: ${r.error}; fix it and the goal goes on, or cancel it`);
      if (!decision.wait) return r;
      await sleep(decision.delayMs);
    }
  }
  function initialize(): void {
    const cannotStart = (error: string) => goal.record('initialize', { type: 'cancel', reason: `cannot start: ${error}` });
    if (gate?.decision === 'spent') {
      ready = true;
      return goal.record('initialize', { type: 'cancel', reason: gate.reason });
    }
    const setUpThen = () =>
      setUp().then(
        (r) =>
          host.post(() => {
            if (!r.ok) {
              ready = true;
              return cannotStart(r.error);
            }
            ({ policy, tools, toolsRef, storeId } = r);
            policyOrigin = r.origin ?? null;
            // A fork starts from its seed (no planner); a goal with checkpoints records its workspace first.
            const forked = checkpoints.forkedEvent();
            if (forked !== null) {
              ready = true;
              return goal.record('initialize', forked);
            }
            checkpoints.baseline(() => {
              ready = true;
              goal.record('initialize', { type: 'decompose' });
            });
          }),
        (error: unknown) =>
          host.post(() => {
            ready = true;
            cannotStart(failureMessage(error));
          }),
      );
    // A fork lays its workspace out from its fork point first.
    const restored = checkpoints.forkRestore();
    if (restored === null) return void setUpThen();
    restored.then(setUpThen, (error: unknown) =>
      host.post(() => {
        ready = true;
        cannotStart(`the fork's workspace could not be laid out: ${failureMessage(error)}`);
      }),
    );
  }

  // ---- signals and updates ----------------------------------------------------------------------
  goalControls({ goal, agents, rejected: host.rejected, authenticatedControls: options.authenticatedControls });
  // Its agents are moved by the same command (each is a run of its own, sent the update too).
  hostMoveHandler({ workspace: options.workspace, routing, post: host.post, publish: host.publish });

  // ---- queries (workflows/goal-views.ts) -----------------------------------------------------------
  goalQueries({ goalId, goal, agents, host, setup: () => ({ policy, policyOrigin }), waiting: () => setupWait.waiting });
  // Registered here, after the queries: a report buffered before the first activation is delivered as soon as its handler is set.
  setHandler(agentReportSignal, (raw: unknown) => host.post(() => agents.report(raw)));
  listenForUpgradeNudge(considerHandover);

  // ---- run --------------------------------------------------------------------------------------
  host.start('autonomy', () => goal.state.status, () => {
    goal.execute(created.directives);
    if (!carry) return initialize();
    host.rearm(carry.timers, (timerId) => goal.record(`timer ${timerId}`, goal.timerFired(timerId)));
    for (const d of carry.deferred) execute(d as Parameters<typeof execute>[0]);
  });

  try {
    await condition(() => done !== null || quiet());
  } catch (error) {
    if (!isCancellation(error)) throw error;
    // Cancelled through Temporal: the same as the cancel signal (the children are already being cancelled).
    await CancellationScope.nonCancellable(async () => {
      handingOver = false;
      goal.post('workflow cancel', { type: 'cancel', reason: 'the workflow was cancelled' });
      await condition(() => done !== null);
    });
  }
  if (done === null && (await host.settle(() => done !== null, quiet)) === 'continue') {
    const next: GoalCarry = {
      ...host.carry(),
      goal: goalMachine.toJSON(goal.state),
      agents: agents.carry(),
      tools,
      toolsRef,
      ...(storeId !== undefined ? { storeId } : {}),
      policy,
      policyOrigin,
      lastProposal: advisors.lastProposal,
      modelCalls: models.calls,
      deferred,
      run,
      ...(checkpoints.carry() !== undefined ? { checkpoints: checkpoints.carry() } : {}),
    };
    // The resolved options: the next run starts with the defaults this one used.
    // A moved workspace: the next run starts on the host it was moved to.
    const moved = routing.host !== null && routing.host !== options.workspaceHost ? { ...options, workspaceHost: routing.host } : options;
    return makeContinueAsNewFunc<typeof goalWorkflow>({ memo: stampedMemo(workflowInfo().memo), ...upgradeOnContinue() })(moved, next);
  }
  await CancellationScope.nonCancellable(async () => {
    // A planner or critic still talking is no longer needed; cancelled agents confirm that they stopped.
    models.cancelAll();
    await condition(() => agents.children.size === 0 && !models.busy);
    await host.finish();
  });

  const final = done as unknown as GoalReport;
  // What the goal's cancelled agents were billed for after it stopped (workflows/goal-agents.ts `late`).
  const usage = agents.late === ZERO_USAGE ? final.usage : addUsage(final.usage, agents.late);
  return {
    goalId,
    verdict: final.verdict,
    summary: final.reason,
    tasks: final.tasks.map((t) => ({ ...t, details: agents.evidence[t.id] ?? null })),
    reviews: [...final.reviews],
    usage,
    cost: usage.costUsd,
    exhaustion: final.exhaustion,
    planVersion: goal.state.planVersion,
    runs: run,
  };
}
