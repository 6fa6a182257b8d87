// What a goal is started with (its options) and what it returns.
import type { ActivityOptions } from '@temporalio/workflow';
import type { BudgetLimits, GoalReport, Review, Task, Usage } from '../machines/index';
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
  maxTokens?: number;
  /** Approval policy of the agents' tools, over the workspace's .keel/policy.json. */
  policy?: PolicyConfigInput;
  /** No human will answer: `ask` becomes the policy's headless choice. */
  headless?: boolean;
  /** Start executing without waiting for approvePlan. */
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
  /** The goal's budget across the planner, the critic and every agent. */
  limits?: Partial<Pick<BudgetLimits, 'inputTokens' | 'outputTokens' | 'costUsd' | 'wallClockMs'>>;
  /** Each agent's model steps (default 25). */
  maxStepsPerTask?: number;
  /** How long an agent's tool call waits for approval (default: forever). */
  approvalTimeoutMs?: number | null;
  maxParallelTools?: number;
  /** Shorter waits between a turn's model retries than the retry table's (tests): it can lower the retries, never raise them. Absent: the table's turn rows (machines/model-retry.ts). */
  retryBackoffMs?: number[];
  /** Conversation store directory; default `<workspace>/.keel/store`. */
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
   *  `restart` and `approvePlan` must carry their (empty, encrypted) argument. */
  authenticatedControls?: boolean;
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
