// What a goal holds: its config, the task graph, plan and review history, budgets spent,
// its timers.
import { z } from 'zod';
import { budgetLimitsSchema, exhaustionSchema, usageSchema } from '../budget';
import { taskSchema, type Task } from '../task-graph';
import { lazySchema } from '../lazy-schema';

const reviewSchema = lazySchema(() => z.strictObject({ cycle: z.number().int().positive(), verdict: z.enum(['pass', 'follow_up', 'replan']), findings: z.string() }));
export type Review = z.infer<typeof reviewSchema>;

export const goalConfigSchema = lazySchema(() => z.strictObject({
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
}));
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

export const goalStateSchema = lazySchema(() => z.discriminatedUnion('status', [
  z.strictObject({ status: z.literal('goal_received'), ...common }),
  z.strictObject({ status: z.literal('planning'), ...common }),
  z.strictObject({ status: z.literal('awaiting_plan_approval'), ...common }),
  z.strictObject({ status: z.literal('executing'), ...common }),
  z.strictObject({ status: z.literal('reviewing'), ...common }),
  z.strictObject({ status: z.literal('blocked'), ...common, taskIds: z.array(z.string()) }),
  z.strictObject({ status: z.literal('goal_met'), ...common, summary: z.string() }),
  z.strictObject({ status: z.literal('stopped'), ...common, reason: z.string(), exhaustion: exhaustionSchema.nullable() }),
]));
export type GoalState = z.infer<typeof goalStateSchema>;
export type GoalStatus = GoalState['status'];
export type Common = Omit<Extract<GoalState, { status: 'planning' }>, 'status'>;

export function commonOf(s: GoalState): Common {
  const { goalId, goal, config, usage, tasks, planVersion, planAttempt, reviewCycle, reviews, feedback, deadlineTimerId, approvalTimerId, attemptsUsed } = s;
  return { goalId, goal, config, usage, tasks, planVersion, planAttempt, reviewCycle, reviews, feedback, deadlineTimerId, approvalTimerId, attemptsUsed };
}

/** The plan as a client shows it (the `plan` query). */
export function planOf(state: GoalState): { planVersion: number; tasks: readonly Task[] } {
  return { planVersion: state.planVersion, tasks: state.tasks };
}
