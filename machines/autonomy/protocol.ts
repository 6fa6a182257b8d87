// What a goal hears (events), what it asks its host to do (directives), and the report it
// ends with.
import { z } from 'zod';
import { callUsageSchema, exhaustionSchema, usageSchema, type Exhaustion, type Usage } from '../budget';
import { type Step } from '../core';
import { type CancelTimer, type StartTimer } from '../directives';
import { type EmitEvent } from '../events';
import { taskInputSchema, type Task } from '../task-graph';
import { type GoalState, type Review } from './state';
import { lazySchema } from '../lazy-schema';
import { keptTaskSchema } from '../goal-fork';

const tasksInput = lazySchema(() => z.array(taskInputSchema));

export const goalEventSchema = lazySchema(() => z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('decompose') }),
  z.strictObject({ type: z.literal('plan_proposed'), tasks: tasksInput, usage: callUsageSchema.optional() }),
  z.strictObject({ type: z.literal('model_failed'), error: z.string() }),
  /** The planner's (planning) or critic's (reviewing) call failed; `attempt` runs after `delayMs` (machines/answer-retry.ts afterFailedRound). */
  z.strictObject({
    type: z.literal('advisor_retry_scheduled'),
    advisor: z.enum(['planner', 'critic']),
    attempt: z.number().int().min(2),
    delayMs: z.number().int().nonnegative(),
    reason: z.string(),
  }),
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
    /** The attempt's turn ended on a budget (its share of the goal's): the limit and the agent's figures. */
    exhaustion: exhaustionSchema.optional(),
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
  /** A fork's start (machines/goal-fork.ts): its plan, the tasks kept done, its plan version, and where it came from in words. */
  z.strictObject({ type: z.literal('forked'), tasks: tasksInput, kept: z.array(keptTaskSchema).max(10_000), planVersion: z.number().int().positive(), from: z.string().min(1) }),
]));
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

export type D = GoalDirective;
export type Out = Step<GoalState, D>;
