// A goal's first state and directives (`[*] → goal_received`) and the defaults it starts with.
import { NO_LIMITS, ZERO_USAGE, type BudgetLimits } from '../budget';
import { startTimer } from '../directives';
import { emit } from '../events';
import { type GoalDirective } from './protocol';
import { type GoalState } from './state';

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

/** What a goal's config holds when its creator names nothing (the goal workflow's options resolver reads these: workflows/goal-options.ts). */
export const GOAL_DEFAULTS = {
  autoApprove: false,
  maxConcurrency: 2,
  maxTaskAttempts: 2,
  maxPlanAttempts: 3,
  maxReviewCycles: 3,
  planApprovalTimeoutMs: null,
} as const satisfies Required<Pick<NewGoal, 'autoApprove' | 'maxConcurrency' | 'maxTaskAttempts' | 'maxPlanAttempts' | 'maxReviewCycles' | 'planApprovalTimeoutMs'>>;

/** `[*] → goal_received`; apply `decompose` to start planning. */
export function createGoal(init: NewGoal): { state: GoalState; directives: GoalDirective[] } {
  const limits: BudgetLimits = { ...NO_LIMITS, ...init.limits };
  const deadlineTimerId = limits.wallClockMs === null ? null : `${init.goalId}/deadline`;
  const state: GoalState = {
    status: 'goal_received',
    goalId: init.goalId,
    goal: init.goal,
    config: {
      autoApprove: init.autoApprove ?? GOAL_DEFAULTS.autoApprove,
      maxConcurrency: init.maxConcurrency ?? GOAL_DEFAULTS.maxConcurrency,
      maxTaskAttempts: init.maxTaskAttempts ?? GOAL_DEFAULTS.maxTaskAttempts,
      maxPlanAttempts: init.maxPlanAttempts ?? GOAL_DEFAULTS.maxPlanAttempts,
      maxReviewCycles: init.maxReviewCycles ?? GOAL_DEFAULTS.maxReviewCycles,
      planApprovalTimeoutMs: init.planApprovalTimeoutMs ?? GOAL_DEFAULTS.planApprovalTimeoutMs,
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
