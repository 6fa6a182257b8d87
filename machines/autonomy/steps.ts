// The steps the reducer is built from: planning, dispatching ready tasks, waiting for
// approval, stopping with a report.
import { addUsage, findExhaustion, type Exhaustion, type Usage } from '../budget';
import { cancelTimer, startTimer } from '../directives';
import { emit } from '../events';
import { allDone, readyTasks } from '../task-graph';
import { type D, type GoalReport, type Out } from './protocol';
import { type Common } from './state';

export const agentIdOf = (goalId: string, taskId: string, attempt: number): string => `${goalId}/task-${taskId}/${attempt}`;

export function report(c: Common, verdict: GoalReport['verdict'], reason: string, exhaustion: Exhaustion | null): D {
  return { type: 'complete', report: { goalId: c.goalId, verdict, reason, tasks: c.tasks, reviews: c.reviews, usage: c.usage, exhaustion } };
}

export function clearTimers(c: Common): { c: Common; out: D[] } {
  const out: D[] = [];
  if (c.deadlineTimerId !== null) out.push(cancelTimer(c.deadlineTimerId));
  if (c.approvalTimerId !== null) out.push(cancelTimer(c.approvalTimerId));
  return { c: { ...c, deadlineTimerId: null, approvalTimerId: null }, out };
}

/** Every road out that is not success: running children are cancelled, the report says why. */
export function stop(c0: Common, reason: string, exhaustion: Exhaustion | null, out0: D[]): Out {
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

export function budgetLeft(c: Common): Exhaustion | null {
  return findExhaustion(c.config.limits, { usage: c.usage });
}

export function requestPlan(c0: Common, attempt: number, feedback: string | null, errors: string[], out: D[]): Out {
  const c = { ...c0, planAttempt: attempt, feedback };
  return {
    state: { status: 'planning', ...c },
    directives: [...out, emit('plan.requested', { goalId: c.goalId, attempt, feedback, errors }), { type: 'request_plan', attempt, feedback, errors }],
  };
}

/** Start ready tasks by priority up to the concurrency limit; then review, wait or block. */
export function dispatch(c0: Common, out0: D[]): Out {
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
export function awaitApproval(planned: Common, out0: D[]): Out {
  const { goalId, planVersion, tasks } = planned;
  const out: D[] = [...out0, emit('plan.approval_requested', { goalId, planVersion }), { type: 'request_plan_approval', planVersion, tasks }];
  let approvalTimerId: string | null = null;
  if (planned.config.planApprovalTimeoutMs !== null) {
    approvalTimerId = `${goalId}/plan-approval-${planVersion}`;
    out.push(startTimer(approvalTimerId, planned.config.planApprovalTimeoutMs));
  }
  return { state: { status: 'awaiting_plan_approval', ...planned, approvalTimerId }, directives: out };
}

export function withUsage(c: Common, usage: Usage | undefined): Common {
  return usage === undefined ? c : { ...c, usage: addUsage(c.usage, usage) };
}
