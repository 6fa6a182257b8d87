// What a goal is started with (its options: workflows/protocol/goal.ts), their one resolver (every default filled in
// once, at the start of a run), and what it returns.
import type { GoalReport, Review, Task, Usage } from '../machines/index';
import { GOAL_DEFAULTS } from '../machines/autonomy';
import { MAX_PLAN_TASKS } from '../machines/task-graph';
import { DEFAULT_MAX_PARALLEL_TOOLS, DEFAULT_MAX_STEPS_PER_TASK, DEFAULT_MAX_TOKENS, DEFAULT_MODEL, defaultStoreDir } from './defaults';
import { DEFAULT_WORKSPACE_HOST_WAIT_MS } from './workspace-host';
import type { GoalOptions } from './protocol/goal';
import type { TaskEvidence } from './protocol/agent';

/** The options the resolver fills in: each has a default, defined once (workflows/defaults.ts, the machines' constants). */
type GoalDefaulted =
  | 'workspaceHostWaitMs'
  | 'model'
  | 'maxTokens'
  | 'headless'
  | 'autoApprove'
  | 'maxConcurrency'
  | 'maxTaskAttempts'
  | 'maxPlanAttempts'
  | 'maxReviewCycles'
  | 'planApprovalTimeoutMs'
  | 'limits'
  | 'maxStepsPerTask'
  | 'approvalTimeoutMs'
  | 'maxParallelTools'
  | 'storeDir'
  | 'maxTasks'
  | 'continueAsNewAfterEvents'
  | 'continueAsNewWhenSuggested'
  | 'authenticatedControls';

/** The limits a goal's options may name, all of them: null is no limit. */
export type GoalLimits = Required<NonNullable<GoalOptions['limits']>>;

/**
 * A goal's options with every default filled in: what a run uses (its planner, critic and
 * agents) and what it hands the next run through continue-as-new. Still optional: what has
 * no default (workspaceHost, policy — the workspace's file decides —, retryBackoffMs,
 * modelActivity, thinking).
 */
export type ResolvedGoalOptions = Omit<GoalOptions, GoalDefaulted> & Required<Pick<GoalOptions, Exclude<GoalDefaulted, 'limits'>>> & { limits: GoalLimits };

/**
 * The one place a goal's defaults are applied. Pure, and idempotent: a run resolves its
 * input once, whether a client started it or an earlier run continued as new (options
 * already resolved), so a default changed by a later deployment does not change a running goal.
 */
export function resolveGoalOptions(options: GoalOptions): ResolvedGoalOptions {
  const limits = options.limits ?? {};
  return {
    ...options,
    workspaceHostWaitMs: options.workspaceHostWaitMs ?? DEFAULT_WORKSPACE_HOST_WAIT_MS,
    model: options.model ?? DEFAULT_MODEL,
    maxTokens: options.maxTokens ?? DEFAULT_MAX_TOKENS,
    headless: options.headless ?? false,
    autoApprove: options.autoApprove ?? GOAL_DEFAULTS.autoApprove,
    maxConcurrency: options.maxConcurrency ?? GOAL_DEFAULTS.maxConcurrency,
    maxTaskAttempts: options.maxTaskAttempts ?? GOAL_DEFAULTS.maxTaskAttempts,
    maxPlanAttempts: options.maxPlanAttempts ?? GOAL_DEFAULTS.maxPlanAttempts,
    maxReviewCycles: options.maxReviewCycles ?? GOAL_DEFAULTS.maxReviewCycles,
    planApprovalTimeoutMs: options.planApprovalTimeoutMs ?? GOAL_DEFAULTS.planApprovalTimeoutMs,
    limits: {
      inputTokens: limits.inputTokens ?? null,
      outputTokens: limits.outputTokens ?? null,
      costUsd: limits.costUsd ?? null,
      wallClockMs: limits.wallClockMs ?? null,
    },
    maxStepsPerTask: options.maxStepsPerTask ?? DEFAULT_MAX_STEPS_PER_TASK,
    approvalTimeoutMs: options.approvalTimeoutMs ?? null,
    maxParallelTools: options.maxParallelTools ?? DEFAULT_MAX_PARALLEL_TOOLS,
    storeDir: options.storeDir ?? defaultStoreDir(options.workspace),
    maxTasks: options.maxTasks ?? MAX_PLAN_TASKS,
    continueAsNewAfterEvents: options.continueAsNewAfterEvents ?? null,
    continueAsNewWhenSuggested: options.continueAsNewWhenSuggested ?? true,
    authenticatedControls: options.authenticatedControls ?? false,
  };
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
  /** Runs the goal took (1 + how many times it continued as new). */
  runs: number;
}
