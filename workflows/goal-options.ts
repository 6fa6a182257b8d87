// What a goal is started with (its options), their one resolver (every default filled in
// once, at the start of a run), and what it returns.
import type { ActivityOptions } from '@temporalio/workflow';
import type { BudgetLimits, GoalReport, Review, Task, Usage } from '../machines/index';
import { GOAL_DEFAULTS } from '../machines/autonomy';
import { MAX_PLAN_TASKS } from '../machines/task-graph';
import { DEFAULT_MAX_PARALLEL_TOOLS, DEFAULT_MAX_STEPS_PER_TASK, DEFAULT_MAX_TOKENS, DEFAULT_MODEL, defaultStoreDir } from './defaults';
import { DEFAULT_WORKSPACE_HOST_WAIT_MS } from './workspace-host';
import type { PolicyConfigInput } from '../machines/policy';
import type { TaskEvidence } from './definitions';

export interface GoalOptions {
  /** What to achieve, in words. */
  goal: string;
  /** Absolute path of the directory every task agent works in. */
  workspace: string;
  /** The host whose disk holds the workspace (SessionOptions.workspaceHost): setup and the agents' tools run there. */
  workspaceHost?: string;
  /** How long a call waits for the workspace host before it fails as "not polling" (default 60 s). */
  workspaceHostWaitMs?: number;
  /** Model of the planner, the critic and the agents (default claude-sonnet-4-6). */
  model?: string;
  /** Output limit of each call of the planner, the critic and the agents (default 4096). */
  maxTokens?: number;
  /** Approval policy of the agents' tools, over the workspace's .keel/policy.json. */
  policy?: PolicyConfigInput;
  /** No human will answer: `ask` becomes the policy's headless choice (default false). */
  headless?: boolean;
  /** Start executing without waiting for approvePlan (default false). */
  autoApprove?: boolean;
  /** Task agents running at once (default 2). */
  maxConcurrency?: number;
  /** Attempts per task before it needs a human (default 2). */
  maxTaskAttempts?: number;
  /** Proposals per planning round (default 3). */
  maxPlanAttempts?: number;
  /** Critic reviews before the goal stops (default 3). */
  maxReviewCycles?: number;
  /** How long a plan waits for approval before the goal stops (default: forever). */
  planApprovalTimeoutMs?: number | null;
  /** The goal's budget across the planner, the critic and every agent; a limit not named is none (default: no limits). */
  limits?: Partial<Pick<BudgetLimits, 'inputTokens' | 'outputTokens' | 'costUsd' | 'wallClockMs'>>;
  /** Each agent's model steps (default 25). */
  maxStepsPerTask?: number;
  /** How long an agent's tool call waits for approval (default: forever). */
  approvalTimeoutMs?: number | null;
  /** Read-only tool calls of an agent's step run side by side up to this many (default 4). */
  maxParallelTools?: number;
  /** Shorter waits between a turn's model retries than the retry table's (tests): it can lower the retries, never raise them. Absent: the table's turn rows (machines/model-retry.ts). */
  retryBackoffMs?: number[];
  /** Conversation store directory; default `<workspace>/.keel/store` (the worker's KEEL_STORE_DIR wins). */
  storeDir?: string;
  /** Overrides of the model activity's options (tests shorten retries). */
  modelActivity?: Partial<ActivityOptions>;
  /**
   * Extended thinking for the task agents: `budgetTokens` for every role, `byRole` per task
   * role (null turns it off for that role). The planner and the critic answer through a
   * forced tool call, which the API does not allow with thinking, so they never think.
   */
  thinking?: { budgetTokens?: number; byRole?: Record<string, { budgetTokens: number } | null> };
  /** Tasks the goal may hold in all, follow-ups included (default 50). */
  maxTasks?: number;
  /** Continue as new once a run's history holds this many events (tests force it; default: only when suggested). */
  continueAsNewAfterEvents?: number | null;
  /** Continue as new when the server suggests it (history size or length); default true. */
  continueAsNewWhenSuggested?: boolean;
  /** Set by Keel's clients when they hold the encryption keys: `resume`, `stop`, `reset`,
   *  `restart` and `approvePlan` must carry their (empty, encrypted) argument (default false). */
  authenticatedControls?: boolean;
}

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
