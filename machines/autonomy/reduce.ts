// The autonomy loop's reducer: one case per event.
import { ANSWER_ROUNDS } from '../answer-retry';
import { addCallUsage, ZERO_USAGE, type Exhaustion } from '../budget';
import { assertNever, reject } from '../core';
import { cancelTimer } from '../directives';
import { emit } from '../events';
import { planProblems, toTask, type Task } from '../task-graph';
import { type D, type GoalEvent, type Out } from './protocol';
import { commonOf, type Common, type GoalState } from './state';
import { awaitApproval, budgetLeft, clearTimers, dispatch, report, requestPlan, stop, withUsage } from './steps';

export function reduce(state: GoalState, event: GoalEvent): Out {
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
    case 'advisor_retry_scheduled': {
      // Nothing changes but the log: the wait and the next call are the runner's (workflows/goal-model.ts).
      const waiting = state.status === 'planning' ? 'planner' : 'critic';
      if (event.advisor !== waiting) return reject(`the ${event.advisor} is not working while the goal is ${state.status}`);
      const { advisor, attempt, delayMs, reason } = event;
      return { state, directives: [emit('plan.retry_scheduled', { goalId, advisor, attempt, maxAttempts: ANSWER_ROUNDS, delayMs, reason })] };
    }
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
      const outOfBudget = !ok && event.exhaustion !== undefined && SHARED_LIMITS.has(event.exhaustion.limit);
      // A failed attempt is retried on its own while attempts remain; then a human decides.
      // Not one that ran out of budget: another attempt would meet the same wall.
      const status = ok ? 'succeeded' : !outOfBudget && task.attempts < task.attemptLimit ? 'pending' : 'failed';
      const updated: Task = { ...task, status, result, evidence };
      const spent = withUsage({ ...c, tasks: c.tasks.map((t) => (t.id === task.id ? updated : t)) }, event.usage);
      const out: D[] = [
        emit('plan.task_completed', { goalId, taskId: task.id, outcome: event.outcome, result, evidence, attempt: event.attempt }),
      ];
      if (!ok) out.push(emit('agent.failed', { agentId: task.agentId, taskId: task.id, error: result ?? 'the task failed' }));
      out.push(emit('agent.terminated', { agentId: task.agentId, taskId: task.id, reason: event.outcome, usage: event.agentUsage ?? event.usage ?? ZERO_USAGE }));
      const exhaustion = budgetLeft(spent) ?? (outOfBudget ? goalExhaustion(spent, event.exhaustion!) : null);
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
    case 'forked': {
      const problems = planProblems(event.tasks, [], c.config.maxTasks);
      if (problems.length > 0) return stop(c, `the fork's plan is not valid: ${problems.join('; ')}`, null, [emit('plan.invalid', { goalId, attempt: 0, errors: problems })]);
      const kept = new Map(event.kept.map((k) => [k.taskId, k]));
      const attemptsUsed: Record<string, number> = {};
      // Kept tasks are done (their agents are the parent's); the others start from their first attempt.
      const tasks = event.tasks.map((t): Task => {
        const k = kept.get(t.id);
        if (k === undefined) return toTask(t, c.config.maxTaskAttempts);
        attemptsUsed[t.id] = k.attempt;
        return { ...toTask(t, Math.max(1, k.attempt)), status: k.status, attempts: k.attempt, result: k.result, evidence: [...k.evidence], agentId: k.agentId };
      });
      const planned: Common = { ...c, tasks, attemptsUsed, planVersion: event.planVersion, feedback: null };
      const out: D[] = [emit('plan.updated', { goalId, planVersion: event.planVersion, changes: event.from, tasks })];
      // Nothing to run (every task kept): straight to the critic; there is no new work to approve.
      if (c.config.autoApprove || tasks.every((t) => t.status !== 'pending')) return dispatch(planned, [...out, emit('plan.approved', { goalId, planVersion: event.planVersion, by: 'auto' })]);
      return awaitApproval(planned, out);
    }
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

/** The limits an agent's share is cut from (machines/budget-share.ts); its step limit is its own. */
const SHARED_LIMITS = new Set<Exhaustion['limit']>(['input_tokens', 'output_tokens', 'cost_usd']);

/**
 * An agent stopped on its share of the budget: the goal's own figures for that limit. Its
 * share left less than its next call could need, so the goal stops — `used` may be below
 * `allowed` (what the running agents held back), `next` is what the call could have needed.
 */
function goalExhaustion(c: Common, agent: Exhaustion): Exhaustion | null {
  const { limits } = c.config;
  const [allowed, used] =
    agent.limit === 'input_tokens' ? [limits.inputTokens, c.usage.inputTokens] : agent.limit === 'output_tokens' ? [limits.outputTokens, c.usage.outputTokens] : [limits.costUsd, c.usage.costUsd];
  if (allowed === null) return null;
  return { limit: agent.limit, allowed, used, over: Math.max(0, used - allowed), ...(agent.next !== undefined ? { next: agent.next } : {}) };
}
