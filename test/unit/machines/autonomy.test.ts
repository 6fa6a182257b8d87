import { describe, expect, it } from 'vitest';
import { createGoal, goalMachine, planProblems, type GoalDirective, type GoalEvent, type GoalState, type NewGoal, type TaskInput } from '../../../machines/index';
import { ANSWER_ROUNDS } from '../../../machines/answer-retry';
import { accepted, events, kinds, ofType } from './helpers';

class Goal {
  state: GoalState;
  readonly directives: GoalDirective[];
  constructor(init: Partial<NewGoal> = {}) {
    const created = createGoal({ goalId: 'g', goal: 'make the tests pass', maxConcurrency: 2, ...init });
    this.state = created.state;
    this.directives = [...created.directives];
  }
  send(...evs: GoalEvent[]): readonly GoalDirective[] {
    const out: GoalDirective[] = [];
    for (const ev of evs) {
      const r = accepted(goalMachine.transition(this.state, ev));
      this.state = r.state;
      out.push(...r.directives);
    }
    this.directives.push(...out);
    return out;
  }
  started(): string[] {
    return ofType(this.directives, 'start_child_agent').map((d) => d.agentId);
  }
  finish(taskId: string, outcome: 'succeeded' | 'failed' = 'succeeded'): readonly GoalDirective[] {
    const task = this.state.tasks.find((t) => t.id === taskId);
    return this.send({ type: 'task_finished', taskId, attempt: task?.attempts ?? 0, outcome, result: `${taskId}: ${outcome}`, evidence: ['npm test: exit 0'] });
  }
}

const plan: TaskInput[] = [
  { id: 'read', title: 'Read the code', instructions: 'find the bug', priority: 1 },
  { id: 'test', title: 'Write a failing test', instructions: 'reproduce it', priority: 5, role: 'tester' },
  { id: 'fix', title: 'Fix it', instructions: 'make the test pass', dependencies: ['read', 'test'], role: 'coder' },
];

describe('autonomy machine', () => {
  it("logs the planner's and critic's retries with the attempt, the wait and why, and changes nothing else", () => {
    const g = new Goal();
    g.send({ type: 'decompose' });
    const before = g.state;
    const retry = g.send({ type: 'advisor_retry_scheduled', advisor: 'planner', attempt: 2, delayMs: 1_000, reason: 'overloaded_error: Overloaded' });
    expect(events(retry)).toEqual([{ kind: 'plan.retry_scheduled', goalId: 'g', advisor: 'planner', attempt: 2, maxAttempts: ANSWER_ROUNDS, delayMs: 1_000, reason: 'overloaded_error: Overloaded' }]);
    expect(g.state).toEqual(before);
    // Only the advisor at work retries: no critic while planning, no planner while reviewing.
    expect(goalMachine.transition(g.state, { type: 'advisor_retry_scheduled', advisor: 'critic', attempt: 2, delayMs: 1_000, reason: 'x' })).toMatchObject({ ok: false });

    const auto = new Goal({ autoApprove: true });
    auto.send({ type: 'decompose' }, { type: 'plan_proposed', tasks: [{ id: 'only', title: 'Only', instructions: 'do it' }] });
    auto.finish('only');
    expect(auto.state.status).toBe('reviewing');
    expect(kinds(auto.send({ type: 'advisor_retry_scheduled', advisor: 'critic', attempt: 3, delayMs: 2_000, reason: 'api_error: 500' }))).toEqual(['plan.retry_scheduled']);
    expect(goalMachine.transition(auto.state, { type: 'advisor_retry_scheduled', advisor: 'planner', attempt: 2, delayMs: 1, reason: 'x' })).toMatchObject({ ok: false });
    // A stopped goal waits for nobody.
    auto.send({ type: 'cancel' });
    expect(goalMachine.transition(auto.state, { type: 'advisor_retry_scheduled', advisor: 'critic', attempt: 4, delayMs: 1, reason: 'x' })).toMatchObject({ ok: false });
  });

  it('plans, waits for approval, runs ready tasks by priority within the concurrency limit, reviews and meets the goal', () => {
    const g = new Goal();
    expect(kinds(g.directives)).toEqual(['plan.goal_received']);
    expect(ofType(g.send({ type: 'decompose' }), 'request_plan')).toEqual([{ type: 'request_plan', attempt: 1, feedback: null, errors: [] }]);
    const proposed = g.send({ type: 'plan_proposed', tasks: plan });
    expect(g.state.status).toBe('awaiting_plan_approval');
    expect(kinds(proposed)).toEqual(['plan.created', 'plan.approval_requested']);

    const approved = g.send({ type: 'approve_plan' });
    expect(g.state.status).toBe('executing');
    expect(ofType(approved, 'start_child_agent').map((d) => [d.taskId, d.agentId, d.role])).toEqual([
      ['test', 'g/task-test/1', 'tester'],
      ['read', 'g/task-read/1', 'worker'],
    ]);
    expect(kinds(g.send({ type: 'task_started', taskId: 'test', attempt: 1 }))).toEqual(['plan.task_started', 'agent.ready']);
    expect(ofType(g.finish('test'), 'start_child_agent')).toEqual([]);
    expect(ofType(g.finish('read'), 'start_child_agent').map((d) => d.taskId)).toEqual(['fix']);
    const last = g.finish('fix');
    expect(g.state.status).toBe('reviewing');
    expect(ofType(last, 'request_review')).toEqual([{ type: 'request_review', cycle: 1 }]);

    const met = g.send({ type: 'review_done', verdict: 'pass', findings: 'tests pass, bug fixed' });
    expect(g.state).toMatchObject({ status: 'goal_met', summary: 'tests pass, bug fixed' });
    const report = ofType(met, 'complete')[0]?.report;
    expect(report).toMatchObject({ verdict: 'goal_met', reviews: [{ cycle: 1, verdict: 'pass' }] });
    expect(report?.tasks.map((t) => [t.id, t.status, t.evidence])).toEqual([
      ['read', 'succeeded', ['npm test: exit 0']],
      ['test', 'succeeded', ['npm test: exit 0']],
      ['fix', 'succeeded', ['npm test: exit 0']],
    ]);
  });

  it('starts at once with autoApprove, and revises the plan with the human’s feedback on rejection', () => {
    const auto = new Goal({ autoApprove: true });
    auto.send({ type: 'decompose' });
    expect(kinds(auto.send({ type: 'plan_proposed', tasks: plan }))).toContain('plan.approved');
    expect(auto.state.status).toBe('executing');

    const g = new Goal();
    g.send({ type: 'decompose' }, { type: 'plan_proposed', tasks: plan });
    const rejected = g.send({ type: 'reject_plan', feedback: 'do not touch the API' });
    expect(g.state.status).toBe('planning');
    expect(ofType(rejected, 'request_plan')).toEqual([{ type: 'request_plan', attempt: 1, feedback: 'do not touch the API', errors: [] }]);
    expect(kinds(g.send({ type: 'plan_proposed', tasks: plan }))[0]).toBe('plan.updated');
  });

  it('sends an invalid plan back to the planner with the errors, and stops after the attempts', () => {
    const g = new Goal({ maxPlanAttempts: 2 });
    g.send({ type: 'decompose' });
    const cyclic: TaskInput[] = [
      { id: 'a', title: 'a', instructions: '', dependencies: ['b'] },
      { id: 'b', title: 'b', instructions: '', dependencies: ['a'] },
    ];
    const again = g.send({ type: 'plan_proposed', tasks: cyclic });
    expect(ofType(again, 'request_plan')).toEqual([{ type: 'request_plan', attempt: 2, feedback: null, errors: ['dependency cycle: a → b → a'] }]);
    g.send({ type: 'plan_proposed', tasks: [] });
    expect(g.state).toMatchObject({ status: 'stopped', reason: 'no valid plan after 2 attempts' });
    expect(planProblems([{ id: 'x', title: 'x', instructions: '', dependencies: ['ghost'] }, { id: 'x', title: 'y', instructions: '' }])).toEqual([
      'task id x is used twice',
      'task x depends on unknown task ghost',
    ]);
  });

  it('retries a failed task, blocks when nothing can run, and continues when a human skips it', () => {
    const g = new Goal({ maxTaskAttempts: 2, autoApprove: true });
    g.send({ type: 'decompose' }, { type: 'plan_proposed', tasks: plan });
    g.finish('read');
    expect(ofType(g.finish('test', 'failed'), 'start_child_agent')).toMatchObject([{ taskId: 'test', attempt: 2, agentId: 'g/task-test/2' }]);
    const stuck = g.finish('test', 'failed');
    expect(g.state).toMatchObject({ status: 'blocked', taskIds: ['test'] });
    expect(events(stuck)).toContainEqual({ kind: 'plan.blocked', goalId: 'g', taskIds: ['test'] });
    const resolved = g.send({ type: 'resolve_task', taskId: 'test', action: 'skip' });
    expect(ofType(resolved, 'start_child_agent').map((d) => d.taskId)).toEqual(['fix']);
    g.finish('fix');
    expect(g.state.status).toBe('reviewing');
  });

  it('a human retry or edit gives a blocked task one more attempt', () => {
    const g = new Goal({ maxTaskAttempts: 1, autoApprove: true });
    g.send({ type: 'decompose' }, { type: 'plan_proposed', tasks: [{ id: 'only', title: 'x', instructions: 'v1' }] });
    g.finish('only', 'failed');
    expect(g.state.status).toBe('blocked');
    const edit = g.send({ type: 'resolve_task', taskId: 'only', action: 'edit', instructions: 'v2' });
    expect(ofType(edit, 'start_child_agent')).toMatchObject([{ attempt: 2, instructions: 'v2', agentId: 'g/task-only/2' }]);
  });

  it('adds follow-up tasks from the critic, replans on request, and stops when review cycles run out', () => {
    const g = new Goal({ autoApprove: true, maxReviewCycles: 2 });
    g.send({ type: 'decompose' }, { type: 'plan_proposed', tasks: [{ id: 'a', title: 'a', instructions: '' }] });
    g.finish('a');
    const followUp = g.send({ type: 'review_done', verdict: 'follow_up', findings: 'no docs', tasks: [{ id: 'docs', title: 'docs', instructions: 'write', dependencies: ['a'] }] });
    expect(kinds(followUp)).toEqual(expect.arrayContaining(['plan.critique', 'plan.updated']));
    expect(ofType(followUp, 'start_child_agent').map((d) => d.taskId)).toEqual(['docs']);
    g.finish('docs');
    const replan = g.send({ type: 'review_done', verdict: 'replan', findings: 'wrong approach' });
    expect(g.state).toMatchObject({ status: 'stopped' });
    expect(ofType(replan, 'complete')[0]?.report.reason).toMatch(/after 2 reviews/);

    const h = new Goal({ autoApprove: true });
    h.send({ type: 'decompose' }, { type: 'plan_proposed', tasks: [{ id: 'a', title: 'a', instructions: '' }] });
    h.finish('a');
    expect(ofType(h.send({ type: 'review_done', verdict: 'replan', findings: 'use a queue' }), 'request_plan')).toEqual([
      { type: 'request_plan', attempt: 1, feedback: 'use a queue', errors: [] },
    ]);
    h.send({ type: 'plan_proposed', tasks: [{ id: 'a', title: 'again', instructions: '' }] });
    // The same task id in a new plan gets a fresh child agent id.
    expect(h.started()).toEqual(['g/task-a/1', 'g/task-a/2']);
  });

  it("holds the critic's follow-up tasks for plan approval unless the goal was started auto-approved", () => {
    const g = new Goal({ followUpsNeedApproval: true, planApprovalTimeoutMs: 60_000 });
    g.send({ type: 'decompose' }, { type: 'plan_proposed', tasks: [{ id: 'a', title: 'a', instructions: '' }] }, { type: 'approve_plan' });
    g.finish('a');
    const followUp = g.send({ type: 'review_done', verdict: 'follow_up', findings: 'no docs', tasks: [{ id: 'docs', title: 'docs', instructions: 'write', dependencies: ['a'] }] });
    // Nothing starts: the grown plan is a new version, asked like the first.
    expect(ofType(followUp, 'start_child_agent')).toEqual([]);
    expect(g.state).toMatchObject({ status: 'awaiting_plan_approval', planVersion: 2, approvalTimerId: 'g/plan-approval-2' });
    expect(kinds(followUp)).toEqual(['plan.critique', 'plan.updated', 'plan.approval_requested']);
    expect(ofType(followUp, 'request_plan_approval')).toEqual([expect.objectContaining({ planVersion: 2 })]);
    expect(ofType(followUp, 'start_timer')).toEqual([expect.objectContaining({ timerId: 'g/plan-approval-2' })]);
    const approved = g.send({ type: 'approve_plan' });
    expect(ofType(approved, 'start_child_agent').map((d) => d.taskId)).toEqual(['docs']);
    expect(events(approved).filter((e) => e.kind === 'plan.approved')).toEqual([expect.objectContaining({ planVersion: 2, by: 'human' })]);

    // Rejected: the planner revises with the human's feedback; the follow-up never ran.
    const r = new Goal({ followUpsNeedApproval: true });
    r.send({ type: 'decompose' }, { type: 'plan_proposed', tasks: [{ id: 'a', title: 'a', instructions: '' }] }, { type: 'approve_plan' });
    r.finish('a');
    r.send({ type: 'review_done', verdict: 'follow_up', findings: 'no docs', tasks: [{ id: 'docs', title: 'docs', instructions: 'write' }] });
    expect(ofType(r.send({ type: 'reject_plan', feedback: 'no docs needed' }), 'request_plan')).toEqual([{ type: 'request_plan', attempt: 1, feedback: 'no docs needed', errors: [] }]);
    expect(r.started()).toEqual(['g/task-a/1']);

    // Started auto-approved: the follow-up runs at once, as the plan did.
    const auto = new Goal({ followUpsNeedApproval: true, autoApprove: true });
    auto.send({ type: 'decompose' }, { type: 'plan_proposed', tasks: [{ id: 'a', title: 'a', instructions: '' }] });
    auto.finish('a');
    const ran = auto.send({ type: 'review_done', verdict: 'follow_up', findings: 'no docs', tasks: [{ id: 'docs', title: 'docs', instructions: 'write' }] });
    expect(ofType(ran, 'start_child_agent').map((d) => d.taskId)).toEqual(['docs']);
  });

  it('stops on budget exhaustion with running children cancelled and a partial report', () => {
    const g = new Goal({ autoApprove: true, limits: { costUsd: 1 } });
    g.send({ type: 'decompose' }, { type: 'plan_proposed', tasks: plan, usage: { inputTokens: 10, outputTokens: 10, costUsd: 0.25 } });
    const out = g.send({ type: 'task_finished', taskId: 'test', attempt: 1, outcome: 'succeeded', usage: { inputTokens: 1, outputTokens: 1, costUsd: 0.875, unpricedCalls: 0 } });
    expect(g.state).toMatchObject({ status: 'stopped', exhaustion: { limit: 'cost_usd', allowed: 1, used: 1.125, over: 0.125 } });
    expect(ofType(out, 'cancel_child_agent')).toEqual([{ type: 'cancel_child_agent', taskId: 'read', agentId: 'g/task-read/1' }]);
    expect(ofType(out, 'complete')[0]?.report.tasks.map((t) => [t.id, t.status])).toEqual([
      ['read', 'cancelled'],
      ['test', 'succeeded'],
      ['fix', 'pending'],
    ]);
  });

  it('an agent stopped on its share of the budget stops the goal with the goal\'s figures, and is not retried', () => {
    const g = new Goal({ autoApprove: true, maxTaskAttempts: 3, limits: { outputTokens: 1_000 } });
    g.send({ type: 'decompose' }, { type: 'plan_proposed', tasks: plan, usage: { inputTokens: 10, outputTokens: 100, costUsd: 0 } });
    // Its next call could need 400 output tokens; its share had 300 left. The goal is below its limit.
    const out = g.send({
      type: 'task_finished',
      taskId: 'test',
      attempt: 1,
      outcome: 'failed',
      result: "the agent's turn ended budget_exhausted",
      usage: { inputTokens: 5, outputTokens: 150, costUsd: 0, unpricedCalls: 0 },
      exhaustion: { limit: 'output_tokens', allowed: 450, used: 150, over: 0, next: 400 },
    });
    expect(g.state).toMatchObject({ status: 'stopped', reason: 'budget exhausted while executing', exhaustion: { limit: 'output_tokens', allowed: 1_000, used: 250, over: 0, next: 400 } });
    expect(ofType(out, 'start_child_agent')).toEqual([]);
    expect(ofType(out, 'complete')[0]?.report.tasks.map((t) => [t.id, t.status])).toEqual([
      ['read', 'cancelled'],
      ['test', 'failed'],
      ['fix', 'pending'],
    ]);
  });

  it('an agent that ran out of steps is retried: its step limit is its own, not the goal\'s budget', () => {
    const g = new Goal({ autoApprove: true, maxTaskAttempts: 2, limits: { outputTokens: 1_000 } });
    g.send({ type: 'decompose' }, { type: 'plan_proposed', tasks: plan });
    const out = g.send({ type: 'task_finished', taskId: 'test', attempt: 1, outcome: 'failed', exhaustion: { limit: 'steps_per_turn', allowed: 20, used: 20, over: 0 } });
    expect(g.state.status).toBe('executing');
    expect(ofType(out, 'start_child_agent').map((d) => d.agentId)).toEqual(['g/task-test/2']);
  });

  it('counts only the unreported part of a finished attempt, and logs what the agent spent in all', () => {
    const g = new Goal({ autoApprove: true });
    g.send({ type: 'decompose' }, { type: 'plan_proposed', tasks: plan });
    g.send({ type: 'usage_reported', usage: { inputTokens: 100, outputTokens: 10, costUsd: 0, unpricedCalls: 0 } });
    const out = g.send({
      type: 'task_finished',
      taskId: 'test',
      attempt: 1,
      outcome: 'succeeded',
      usage: { inputTokens: 5, outputTokens: 1, costUsd: 0, unpricedCalls: 0 },
      agentUsage: { inputTokens: 105, outputTokens: 11, costUsd: 0, unpricedCalls: 0 },
    });
    expect(g.state.usage).toMatchObject({ inputTokens: 105, outputTokens: 11 });
    expect(events(out)).toContainEqual(expect.objectContaining({ kind: 'agent.terminated', taskId: 'test', usage: { inputTokens: 105, outputTokens: 11, costUsd: 0, unpricedCalls: 0 } }));
  });

  it('stops on cancel and when no one approves the plan in time', () => {
    const g = new Goal({ planApprovalTimeoutMs: 60_000 });
    g.send({ type: 'decompose' });
    const asked = g.send({ type: 'plan_proposed', tasks: plan });
    const timer = ofType(asked, 'start_timer')[0];
    expect(timer).toEqual({ type: 'start_timer', timerId: 'g/plan-approval-1', durationMs: 60_000 });
    g.send({ type: 'timer_fired', timerId: 'g/plan-approval-1' });
    expect(g.state).toMatchObject({ status: 'stopped', reason: 'no one approved the plan in time' });

    const h = new Goal({ autoApprove: true });
    h.send({ type: 'decompose' }, { type: 'plan_proposed', tasks: plan });
    const cancelled = h.send({ type: 'cancel' });
    expect(ofType(cancelled, 'cancel_child_agent').map((d) => d.taskId)).toEqual(['read', 'test']);
    expect(events(cancelled)).toContainEqual({ kind: 'plan.stopped', goalId: 'g', reason: 'cancelled by the user' });
    expect(goalMachine.transition(h.state, { type: 'cancel' })).toMatchObject({ ok: false, error: { code: 'not_allowed', state: 'stopped', event: 'cancel' } });
  });

  it('refuses a result for a task attempt that is not running', () => {
    const g = new Goal({ autoApprove: true });
    g.send({ type: 'decompose' }, { type: 'plan_proposed', tasks: plan });
    const r = goalMachine.transition(g.state, { type: 'task_finished', taskId: 'fix', attempt: 1, outcome: 'succeeded' });
    expect(r).toMatchObject({ ok: false, error: { code: 'guard_failed' } });
    expect(r.ok || r.error.message).toMatch(/task fix attempt 1 is not running/);
  });
});
