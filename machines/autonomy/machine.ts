// The autonomy loop's transition table.
import { defineMachine } from '../core';
import { goalEventSchema, type GoalDirective, type GoalEvent } from './protocol';
import { reduce } from './reduce';
import { goalStateSchema, type GoalState, type GoalStatus } from './state';

const S = ['goal_received', 'planning', 'awaiting_plan_approval', 'executing', 'reviewing', 'blocked', 'goal_met', 'stopped'] as const;
const E = [
  'decompose',
  'plan_proposed',
  'model_failed',
  'advisor_retry_scheduled',
  'approve_plan',
  'reject_plan',
  'task_started',
  'task_finished',
  'resolve_task',
  'review_done',
  'usage_reported',
  'cancel',
  'timer_fired',
  'forked',
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
    // A fork starts from its parent's plan (machines/goal-fork.ts): no planner.
    row('goal_received', 'forked', 'awaiting_plan_approval', 'valid plan, approval needed'),
    row('goal_received', 'forked', 'executing', 'valid plan, auto-approve; tasks running'),
    row('goal_received', 'forked', 'reviewing', 'valid plan, every task kept'),
    row('goal_received', 'forked', 'stopped', 'invalid plan'),
    row('planning', 'plan_proposed', 'awaiting_plan_approval', 'valid plan, approval needed'),
    row('planning', 'plan_proposed', 'executing', 'valid plan, auto-approve'),
    row('planning', 'plan_proposed', 'planning', 'invalid plan, attempts left'),
    row('planning', 'plan_proposed', 'stopped', 'invalid plan and attempts spent, or budget exhausted'),
    row('planning', 'model_failed', 'stopped'),
    row('planning', 'advisor_retry_scheduled', 'planning', 'the planner'),
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
    row('reviewing', 'advisor_retry_scheduled', 'reviewing', 'the critic'),
    ...LIVE.filter((s) => s !== 'goal_received').map((s) => row(s, 'usage_reported', s, 'budget left')),
    ...LIVE.filter((s) => s !== 'goal_received').map((s) => row(s, 'usage_reported', 'stopped', 'budget exhausted')),
    ...LIVE.map((s) => row(s, 'cancel', 'stopped')),
    ...LIVE.map((s) => row(s, 'timer_fired', 'stopped', s === 'awaiting_plan_approval' ? 'deadline or plan approval timeout' : 'deadline')),
  ],
  stateSchema: goalStateSchema,
  eventSchema: goalEventSchema,
  reduce,
});
