// The autonomy loop (seed 002): goal → plan → (approval) → execute a task DAG with child
// agents → critic review → goal met, or stopped with an honest report. The machine picks
// which tasks start; the goal workflow starts them as child agent workflows and reports
// back. Every way out (cancel, budget, deadline, timeouts) ends in `stopped` with the
// reason, so a goal never just hangs.
import { z } from 'zod';
import {
  addCallUsage,
  addUsage,
  budgetLimitsSchema,
  callUsageSchema,
  exhaustionSchema,
  findExhaustion,
  NO_LIMITS,
  usageSchema,
  ZERO_USAGE,
  type BudgetLimits,
  type Exhaustion,
  type Usage,
} from './budget';
import { assertNever, defineMachine, reject, type Step } from './core';
import { cancelTimer, startTimer, type CancelTimer, type StartTimer } from './directives';
import { emit, type EmitEvent } from './events';
import { allDone, planProblems, readyTasks, taskInputSchema, taskSchema, toTask, type Task, type TaskInput } from './task-graph';

const reviewSchema = z.strictObject({ cycle: z.number().int().positive(), verdict: z.enum(['pass', 'follow_up', 'replan']), findings: z.string() });
export type Review = z.infer<typeof reviewSchema>;

export const goalConfigSchema = z.strictObject({
  autoApprove: z.boolean(),
  /** Child agents running at once. */
  maxConcurrency: z.number().int().positive(),
  /** Attempts per task before it needs a human. */
  maxTaskAttempts: z.number().int().positive(),
  /** Proposals (valid or not) per planning round before the goal stops. */
  maxPlanAttempts: z.number().int().positive(),
  maxReviewCycles: z.number().int().positive(),
  planApprovalTimeoutMs: z.number().int().positive().nullable(),
  limits: budgetLimitsSchema,
  /** Tasks the goal may hold in all (follow-ups included); MAX_PLAN_TASKS when absent. */
  maxTasks: z.number().int().positive().optional(),
  /** The critic's follow-up tasks wait for plan approval like a plan (unless autoApprove).
   *  Absent in goals started before this rule: they keep running follow-ups at once. */
  followUpsNeedApproval: z.boolean().optional(),
});
export type GoalConfig = z.infer<typeof goalConfigSchema>;

const common = {
  goalId: z.string().min(1),
  goal: z.string(),
  config: goalConfigSchema,
  usage: usageSchema,
  tasks: z.array(taskSchema),
  planVersion: z.number().int().nonnegative(),
  planAttempt: z.number().int().nonnegative(),
  reviewCycle: z.number().int().nonnegative(),
  reviews: z.array(reviewSchema),
  /** Human or critic feedback for the next planning round. */
  feedback: z.string().nullable(),
  deadlineTimerId: z.string().nullable(),
  approvalTimerId: z.string().nullable(),
  /** Attempts ever started per task id, across plans: child agent ids never repeat. */
  attemptsUsed: z.record(z.string(), z.number().int().nonnegative()),
};

export const goalStateSchema = z.discriminatedUnion('status', [
  z.strictObject({ status: z.literal('goal_received'), ...common }),
  z.strictObject({ status: z.literal('planning'), ...common }),
  z.strictObject({ status: z.literal('awaiting_plan_approval'), ...common }),
  z.strictObject({ status: z.literal('executing'), ...common }),
  z.strictObject({ status: z.literal('reviewing'), ...common }),
  z.strictObject({ status: z.literal('blocked'), ...common, taskIds: z.array(z.string()) }),
  z.strictObject({ status: z.literal('goal_met'), ...common, summary: z.string() }),
  z.strictObject({ status: z.literal('stopped'), ...common, reason: z.string(), exhaustion: exhaustionSchema.nullable() }),
]);
export type GoalState = z.infer<typeof goalStateSchema>;
export type GoalStatus = GoalState['status'];

const tasksInput = z.array(taskInputSchema);

export const goalEventSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('decompose') }),
  z.strictObject({ type: z.literal('plan_proposed'), tasks: tasksInput, usage: callUsageSchema.optional() }),
  z.strictObject({ type: z.literal('model_failed'), error: z.string() }),
  z.strictObject({ type: z.literal('approve_plan') }),
  z.strictObject({ type: z.literal('reject_plan'), feedback: z.string().min(1) }),
  z.strictObject({ type: z.literal('task_started'), taskId: z.string(), attempt: z.number().int().positive() }),
  z.strictObject({
    type: z.literal('task_finished'),
    taskId: z.string(),
    attempt: z.number().int().positive(),
    outcome: z.enum(['succeeded', 'failed']),
    result: z.string().optional(),
    evidence: z.array(z.string()).optional(),
    /** What the attempt spent that the goal has not counted yet (through `usage_reported`). */
    usage: usageSchema.optional(),
    /** What the attempt spent in all, for the log (default: `usage`). */
    agentUsage: usageSchema.optional(),
  }),
  z.strictObject({ type: z.literal('resolve_task'), taskId: z.string(), action: z.enum(['retry', 'skip', 'edit']), instructions: z.string().optional() }),
  z.strictObject({
    type: z.literal('review_done'),
    verdict: z.enum(['pass', 'follow_up', 'replan']),
    findings: z.string(),
    tasks: tasksInput.optional(),
    usage: callUsageSchema.optional(),
  }),
  z.strictObject({ type: z.literal('usage_reported'), usage: usageSchema }),
  z.strictObject({ type: z.literal('cancel'), reason: z.string().optional() }),
  z.strictObject({ type: z.literal('timer_fired'), timerId: z.string() }),
]);
export type GoalEvent = z.infer<typeof goalEventSchema>;

export interface GoalReport {
  readonly goalId: string;
  readonly verdict: 'goal_met' | 'stopped';
  readonly reason: string;
  readonly tasks: readonly Task[];
  readonly reviews: readonly Review[];
  readonly usage: Usage;
  readonly exhaustion: Exhaustion | null;
}

export type GoalDirective =
  | EmitEvent
  | StartTimer
  | CancelTimer
  /** Ask the planner model for a plan; answer `plan_proposed` (or `model_failed`). */
  | { readonly type: 'request_plan'; readonly attempt: number; readonly feedback: string | null; readonly errors: readonly string[] }
  /** Surface the plan to a human; answer `approve_plan` / `reject_plan`. */
  | { readonly type: 'request_plan_approval'; readonly planVersion: number; readonly tasks: readonly Task[] }
  /** Start a child agent for the task; answer `task_started`, then `task_finished`. */
  | {
      readonly type: 'start_child_agent';
      readonly taskId: string;
      readonly attempt: number;
      readonly agentId: string;
      readonly title: string;
      readonly instructions: string;
      readonly role: string;
    }
  | { readonly type: 'cancel_child_agent'; readonly taskId: string; readonly agentId: string }
  /** Ask the critic to review the work; answer `review_done`. */
  | { readonly type: 'request_review'; readonly cycle: number }
  | { readonly type: 'complete'; readonly report: GoalReport };

export interface NewGoal {
  readonly goalId: string;
  readonly goal: string;
  readonly autoApprove?: boolean;
  readonly maxConcurrency?: number;
  readonly maxTaskAttempts?: number;
  readonly maxPlanAttempts?: number;
  readonly maxReviewCycles?: number;
  readonly planApprovalTimeoutMs?: number | null;
  readonly limits?: Partial<BudgetLimits>;
  readonly maxTasks?: number;
  readonly followUpsNeedApproval?: boolean;
}

/** `[*] → goal_received`; apply `decompose` to start planning. */
export function createGoal(init: NewGoal): { state: GoalState; directives: GoalDirective[] } {
  const limits: BudgetLimits = { ...NO_LIMITS, ...init.limits };
  const deadlineTimerId = limits.wallClockMs === null ? null : `${init.goalId}/deadline`;
  const state: GoalState = {
    status: 'goal_received',
    goalId: init.goalId,
    goal: init.goal,
    config: {
      autoApprove: init.autoApprove ?? false,
      maxConcurrency: init.maxConcurrency ?? 2,
      maxTaskAttempts: init.maxTaskAttempts ?? 2,
      maxPlanAttempts: init.maxPlanAttempts ?? 3,
      maxReviewCycles: init.maxReviewCycles ?? 3,
      planApprovalTimeoutMs: init.planApprovalTimeoutMs ?? null,
      limits,
      ...(init.maxTasks !== undefined ? { maxTasks: init.maxTasks } : {}),
      ...(init.followUpsNeedApproval !== undefined ? { followUpsNeedApproval: init.followUpsNeedApproval } : {}),
    },
    usage: ZERO_USAGE,
    tasks: [],
    planVersion: 0,
    planAttempt: 0,
    reviewCycle: 0,
    reviews: [],
    feedback: null,
    deadlineTimerId,
    approvalTimerId: null,
    attemptsUsed: {},
  };
  const directives: GoalDirective[] = [emit('plan.goal_received', { goalId: init.goalId, goalDescription: init.goal })];
  if (deadlineTimerId !== null && limits.wallClockMs !== null) directives.push(startTimer(deadlineTimerId, limits.wallClockMs));
  return { state, directives };
}

const S = ['goal_received', 'planning', 'awaiting_plan_approval', 'executing', 'reviewing', 'blocked', 'goal_met', 'stopped'] as const;
const E = [
  'decompose',
  'plan_proposed',
  'model_failed',
  'approve_plan',
  'reject_plan',
  'task_started',
  'task_finished',
  'resolve_task',
  'review_done',
  'usage_reported',
  'cancel',
  'timer_fired',
] as const;
type Ev = GoalEvent['type'];
const row = (from: GoalStatus, event: Ev, to: GoalStatus, guard?: string) => (guard === undefined ? { from, event, to } : { from, event, to, guard });
const LIVE = ['goal_received', 'planning', 'awaiting_plan_approval', 'executing', 'reviewing', 'blocked'] as const;
/** Where scheduling leads: more work, review when all is done, blocked when stuck. */
const dispatchRows = (from: GoalStatus, event: Ev, guard: string) => [
  row(from, event, 'executing', `${guard}; tasks running`),
  row(from, event, 'reviewing', `${guard}; every task done`),
  row(from, event, 'blocked', `${guard}; nothing runnable, work left`),
];

export const goalMachine = defineMachine<GoalState, GoalEvent, GoalDirective>({
  name: 'autonomy',
  states: S,
  events: E,
  terminal: ['goal_met', 'stopped'],
  table: [
    row('goal_received', 'decompose', 'planning'),
    row('planning', 'plan_proposed', 'awaiting_plan_approval', 'valid plan, approval needed'),
    row('planning', 'plan_proposed', 'executing', 'valid plan, auto-approve'),
    row('planning', 'plan_proposed', 'planning', 'invalid plan, attempts left'),
    row('planning', 'plan_proposed', 'stopped', 'invalid plan and attempts spent, or budget exhausted'),
    row('planning', 'model_failed', 'stopped'),
    row('awaiting_plan_approval', 'approve_plan', 'executing'),
    row('awaiting_plan_approval', 'reject_plan', 'planning', 'revise with feedback'),
    row('executing', 'task_started', 'executing', 'this attempt is running'),
    ...dispatchRows('executing', 'task_finished', 'this attempt'),
    row('executing', 'task_finished', 'stopped', 'budget exhausted'),
    row('executing', 'resolve_task', 'executing', 'a failed task'),
    ...dispatchRows('blocked', 'resolve_task', 'a failed task'),
    row('reviewing', 'review_done', 'goal_met', 'pass'),
    row('reviewing', 'review_done', 'executing', 'follow-up tasks, auto-approve (or a goal from before follow-ups needed approval)'),
    row('reviewing', 'review_done', 'awaiting_plan_approval', 'follow-up tasks, approval needed'),
    row('reviewing', 'review_done', 'planning', 'replan'),
    row('reviewing', 'review_done', 'stopped', 'review cycles spent or budget exhausted'),
    row('reviewing', 'model_failed', 'stopped'),
    ...LIVE.filter((s) => s !== 'goal_received').map((s) => row(s, 'usage_reported', s, 'budget left')),
    ...LIVE.filter((s) => s !== 'goal_received').map((s) => row(s, 'usage_reported', 'stopped', 'budget exhausted')),
    ...LIVE.map((s) => row(s, 'cancel', 'stopped')),
    ...LIVE.map((s) => row(s, 'timer_fired', 'stopped', s === 'awaiting_plan_approval' ? 'deadline or plan approval timeout' : 'deadline')),
  ],
  stateSchema: goalStateSchema,
  eventSchema: goalEventSchema,
  reduce,
});

type D = GoalDirective;
type Out = Step<GoalState, D>;
type Common = Omit<Extract<GoalState, { status: 'planning' }>, 'status'>;

function commonOf(s: GoalState): Common {
  const { goalId, goal, config, usage, tasks, planVersion, planAttempt, reviewCycle, reviews, feedback, deadlineTimerId, approvalTimerId, attemptsUsed } = s;
  return { goalId, goal, config, usage, tasks, planVersion, planAttempt, reviewCycle, reviews, feedback, deadlineTimerId, approvalTimerId, attemptsUsed };
}

const agentIdOf = (goalId: string, taskId: string, attempt: number): string => `${goalId}/task-${taskId}/${attempt}`;

function report(c: Common, verdict: GoalReport['verdict'], reason: string, exhaustion: Exhaustion | null): D {
  return { type: 'complete', report: { goalId: c.goalId, verdict, reason, tasks: c.tasks, reviews: c.reviews, usage: c.usage, exhaustion } };
}

function clearTimers(c: Common): { c: Common; out: D[] } {
  const out: D[] = [];
  if (c.deadlineTimerId !== null) out.push(cancelTimer(c.deadlineTimerId));
  if (c.approvalTimerId !== null) out.push(cancelTimer(c.approvalTimerId));
  return { c: { ...c, deadlineTimerId: null, approvalTimerId: null }, out };
}

/** Every road out that is not success: running children are cancelled, the report says why. */
function stop(c0: Common, reason: string, exhaustion: Exhaustion | null, out0: D[]): Out {
  const { c: cleared, out: timers } = clearTimers(c0);
  const out = [...out0, ...timers];
  const tasks = cleared.tasks.map((t) => {
    if (t.status !== 'running' || t.agentId === null) return t;
    out.push({ type: 'cancel_child_agent', taskId: t.id, agentId: t.agentId });
    return { ...t, status: 'cancelled' as const };
  });
  const c = { ...cleared, tasks };
  if (exhaustion !== null) out.push(emit('budget.exhausted', { ...exhaustion, scope: `goal ${c.goalId}` }));
  out.push(emit('plan.stopped', { goalId: c.goalId, reason }), report(c, 'stopped', reason, exhaustion));
  return { state: { status: 'stopped', ...c, reason, exhaustion }, directives: out };
}

function budgetLeft(c: Common): Exhaustion | null {
  return findExhaustion(c.config.limits, { usage: c.usage });
}

function requestPlan(c0: Common, attempt: number, feedback: string | null, errors: string[], out: D[]): Out {
  const c = { ...c0, planAttempt: attempt, feedback };
  return {
    state: { status: 'planning', ...c },
    directives: [...out, emit('plan.requested', { goalId: c.goalId, attempt, feedback, errors }), { type: 'request_plan', attempt, feedback, errors }],
  };
}

/** Start ready tasks by priority up to the concurrency limit; then review, wait or block. */
function dispatch(c0: Common, out0: D[]): Out {
  const out = [...out0];
  let running = c0.tasks.filter((t) => t.status === 'running').length;
  let tasks = c0.tasks;
  const attemptsUsed = { ...c0.attemptsUsed };
  // Highest priority first: the runner starts children in the order it is told.
  for (const t of readyTasks(c0.tasks).slice(0, Math.max(0, c0.config.maxConcurrency - running))) {
    const attempt = t.attempts + 1;
    const agentId = agentIdOf(c0.goalId, t.id, attempt);
    out.push(
      emit('plan.task_assigned', { goalId: c0.goalId, taskId: t.id, agentId, attempt }),
      emit('agent.spawning', { agentId, role: t.role, parentId: c0.goalId, taskId: t.id }),
      { type: 'start_child_agent', taskId: t.id, attempt, agentId, title: t.title, instructions: t.instructions, role: t.role },
    );
    running++;
    attemptsUsed[t.id] = attempt;
    tasks = tasks.map((x) => (x.id === t.id ? { ...x, status: 'running' as const, attempts: attempt, agentId } : x));
  }
  const c = { ...c0, tasks, attemptsUsed };
  if (allDone(tasks)) {
    const cycle = c.reviewCycle + 1;
    return { state: { status: 'reviewing', ...c, reviewCycle: cycle }, directives: [...out, { type: 'request_review', cycle }] };
  }
  if (running === 0) {
    const taskIds = tasks.filter((t) => t.status === 'failed').map((t) => t.id);
    return { state: { status: 'blocked', ...c, taskIds }, directives: [...out, emit('plan.blocked', { goalId: c.goalId, taskIds })] };
  }
  return { state: { status: 'executing', ...c }, directives: out };
}

/** The plan (first, replanned, or grown by follow-ups) waits for a human; a timer if configured. */
function awaitApproval(planned: Common, out0: D[]): Out {
  const { goalId, planVersion, tasks } = planned;
  const out: D[] = [...out0, emit('plan.approval_requested', { goalId, planVersion }), { type: 'request_plan_approval', planVersion, tasks }];
  let approvalTimerId: string | null = null;
  if (planned.config.planApprovalTimeoutMs !== null) {
    approvalTimerId = `${goalId}/plan-approval-${planVersion}`;
    out.push(startTimer(approvalTimerId, planned.config.planApprovalTimeoutMs));
  }
  return { state: { status: 'awaiting_plan_approval', ...planned, approvalTimerId }, directives: out };
}

function withUsage(c: Common, usage: Usage | undefined): Common {
  return usage === undefined ? c : { ...c, usage: addUsage(c.usage, usage) };
}

function reduce(state: GoalState, event: GoalEvent): Out {
  const c = commonOf(state);
  const goalId = c.goalId;
  switch (event.type) {
    case 'decompose':
      return requestPlan(c, 1, null, [], []);
    case 'plan_proposed': {
      const spent = event.usage === undefined ? c : { ...c, usage: addCallUsage(c.usage, event.usage) };
      const exhaustion = budgetLeft(spent);
      if (exhaustion !== null) return stop(spent, 'budget exhausted while planning', exhaustion, []);
      const problems = planProblems(event.tasks, [], c.config.maxTasks);
      if (problems.length > 0) {
        const out = [emit('plan.invalid', { goalId, attempt: c.planAttempt, errors: problems })];
        if (c.planAttempt >= c.config.maxPlanAttempts) return stop(spent, `no valid plan after ${c.planAttempt} attempts`, null, out);
        return requestPlan(spent, c.planAttempt + 1, c.feedback, problems, out);
      }
      const planVersion = c.planVersion + 1;
      // A task id an earlier plan used keeps counting attempts, so every child agent id
      // (`<goal>/task-<id>/<attempt>`) stays unique across replans.
      const tasks = event.tasks.map((t) => {
        const attempts = c.attemptsUsed[t.id] ?? 0;
        return { ...toTask(t, attempts + c.config.maxTaskAttempts), attempts };
      });
      const planned: Common = { ...spent, tasks, planVersion, feedback: null };
      const out: D[] = [
        planVersion === 1
          ? emit('plan.created', { goalId, planVersion, tasks })
          : emit('plan.updated', { goalId, planVersion, changes: c.feedback ?? 'replanned', tasks }),
      ];
      if (c.config.autoApprove) return dispatch(planned, [...out, emit('plan.approved', { goalId, planVersion, by: 'auto' })]);
      return awaitApproval(planned, out);
    }
    case 'model_failed':
      return stop(c, `the ${state.status === 'planning' ? 'planner' : 'critic'} failed: ${event.error}`, null, []);
    case 'approve_plan':
    case 'reject_plan': {
      const out: D[] = c.approvalTimerId === null ? [] : [cancelTimer(c.approvalTimerId)];
      const decided: Common = { ...c, approvalTimerId: null };
      if (event.type === 'approve_plan') return dispatch(decided, [...out, emit('plan.approved', { goalId, planVersion: c.planVersion, by: 'human' })]);
      out.push(emit('plan.rejected', { goalId, planVersion: c.planVersion, feedback: event.feedback }));
      return requestPlan(decided, 1, event.feedback, [], out);
    }
    case 'task_started': {
      const task = c.tasks.find((t) => t.id === event.taskId);
      if (task?.status !== 'running' || task.attempts !== event.attempt || task.agentId === null) {
        return reject(`task ${event.taskId} attempt ${event.attempt} is not running`);
      }
      return {
        state,
        directives: [
          emit('plan.task_started', { goalId, taskId: task.id, attempt: event.attempt }),
          emit('agent.ready', { agentId: task.agentId, taskId: task.id }),
        ],
      };
    }
    case 'task_finished': {
      const task = c.tasks.find((t) => t.id === event.taskId);
      if (task?.status !== 'running' || task.attempts !== event.attempt || task.agentId === null) {
        return reject(`task ${event.taskId} attempt ${event.attempt} is not running`);
      }
      const ok = event.outcome === 'succeeded';
      const evidence = event.evidence ?? [];
      const result = event.result ?? null;
      // A failed attempt is retried on its own while attempts remain; then a human decides.
      const status = ok ? 'succeeded' : task.attempts < task.attemptLimit ? 'pending' : 'failed';
      const updated: Task = { ...task, status, result, evidence };
      const spent = withUsage({ ...c, tasks: c.tasks.map((t) => (t.id === task.id ? updated : t)) }, event.usage);
      const out: D[] = [
        emit('plan.task_completed', { goalId, taskId: task.id, outcome: event.outcome, result, evidence, attempt: event.attempt }),
      ];
      if (!ok) out.push(emit('agent.failed', { agentId: task.agentId, taskId: task.id, error: result ?? 'the task failed' }));
      out.push(emit('agent.terminated', { agentId: task.agentId, taskId: task.id, reason: event.outcome, usage: event.agentUsage ?? event.usage ?? ZERO_USAGE }));
      const exhaustion = budgetLeft(spent);
      if (exhaustion !== null) return stop(spent, 'budget exhausted while executing', exhaustion, out);
      return dispatch(spent, out);
    }
    case 'resolve_task': {
      const task = c.tasks.find((t) => t.id === event.taskId);
      if (task?.status !== 'failed') return reject(`task ${event.taskId} has not failed`);
      if (event.action === 'edit' && event.instructions === undefined) return reject('edit needs new instructions');
      const updated: Task =
        event.action === 'skip'
          ? { ...task, status: 'skipped' }
          : { ...task, status: 'pending', attemptLimit: task.attempts + 1, instructions: event.instructions ?? task.instructions };
      const resolved = { ...c, tasks: c.tasks.map((t) => (t.id === task.id ? updated : t)) };
      return dispatch(resolved, [emit('plan.task_resolved', { goalId, taskId: task.id, action: event.action })]);
    }
    case 'review_done': {
      const spent = event.usage === undefined ? c : { ...c, usage: addCallUsage(c.usage, event.usage) };
      const reviewed: Common = { ...spent, reviews: [...c.reviews, { cycle: c.reviewCycle, verdict: event.verdict, findings: event.findings }] };
      const out: D[] = [emit('plan.critique', { goalId, cycle: c.reviewCycle, verdict: event.verdict, findings: event.findings })];
      if (event.verdict === 'pass') {
        const { c: done, out: timers } = clearTimers(reviewed);
        return {
          state: { status: 'goal_met', ...done, summary: event.findings },
          directives: [...out, ...timers, emit('plan.goal_met', { goalId, summary: event.findings }), report(done, 'goal_met', event.findings, null)],
        };
      }
      const exhaustion = budgetLeft(reviewed);
      if (exhaustion !== null) return stop(reviewed, 'budget exhausted while reviewing', exhaustion, out);
      if (c.reviewCycle >= c.config.maxReviewCycles) {
        return stop(reviewed, `the critic still found issues after ${c.reviewCycle} reviews: ${event.findings}`, null, out);
      }
      // The finished tasks stay in the state while replanning: the planner sees what was done.
      if (event.verdict === 'replan') return requestPlan(reviewed, 1, event.findings, [], out);
      const followUps = event.tasks ?? [];
      const problems = planProblems(followUps, c.tasks, c.config.maxTasks);
      if (problems.length > 0) return reject(`invalid follow-up tasks: ${problems.join('; ')}`);
      const tasks = [...c.tasks, ...followUps.map((t) => toTask(t, c.config.maxTaskAttempts))];
      const planVersion = c.planVersion + 1;
      out.push(emit('plan.updated', { goalId, planVersion, changes: `follow-up: ${event.findings}`, tasks }));
      // The human approved a plan, not whatever the critic adds to it: new tasks are a new
      // plan version, approved like the first (unless the goal was started auto-approved).
      if (c.config.followUpsNeedApproval === true && !c.config.autoApprove) return awaitApproval({ ...reviewed, tasks, planVersion }, out);
      return dispatch({ ...reviewed, tasks, planVersion }, out);
    }
    case 'usage_reported': {
      const spent = withUsage(c, event.usage);
      const exhaustion = budgetLeft(spent);
      if (exhaustion !== null) return stop(spent, `budget exhausted while ${state.status}`, exhaustion, []);
      // Usage is bookkeeping, not a log entry: the children's own events carry it.
      return { state: { ...state, usage: spent.usage }, directives: [] };
    }
    case 'cancel':
      return stop(c, event.reason ?? 'cancelled by the user', null, []);
    case 'timer_fired': {
      if (event.timerId === c.approvalTimerId && state.status === 'awaiting_plan_approval') {
        return stop(c, 'no one approved the plan in time', null, []);
      }
      if (event.timerId !== c.deadlineTimerId) return reject(`timer ${event.timerId} is not running`);
      const wall = c.config.limits.wallClockMs ?? 0;
      return stop(c, 'the wall-clock budget is exhausted', { limit: 'wall_clock', allowed: wall, used: wall, over: 0 }, []);
    }
    default:
      return assertNever(event);
  }
}

/** The plan as a client shows it (the `plan` query). */
export function planOf(state: GoalState): { planVersion: number; tasks: readonly Task[] } {
  return { planVersion: state.planVersion, tasks: state.tasks };
}

export type { Task, TaskInput };
