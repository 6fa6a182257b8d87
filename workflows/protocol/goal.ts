// A goal's protocol: what it is started with (its options, whose type is the schema's
// input) and its messages in and out — signals, updates and queries typed by the schemas
// their payloads must satisfy. The same names as the session's where the operation is the
// same (`approve`, `deny`, `state`, `pendingApprovals`, `usage`, `events`); payloads are
// typed by hand as easily. Its task agents' protocol is ./agent.ts.
import { defineQuery, defineSignal } from '@temporalio/workflow';
import { z } from 'zod';
import { budgetLimitsSchema } from '../../machines/budget';
import type { BudgetLimits, GoalState, Task, Usage } from '../../machines/index';
// The policy's schema from its own module (not machines/policy/index.ts: see ./session.ts).
import { PolicyConfig } from '../../machines/policy/config';
import type { GoalLogEntry } from '../log-entries';
import { lazySchema } from '../../machines/lazy-schema';
import { approveSchema, denySchema, GOAL_TEXT_MAX, goalText, noPayloadSchema, reasonSchema, type PendingApproval, type PolicyView, type transcriptQuerySchema } from './controls';
import { controlNames, defineControl } from './control';
import { absolutePath, activityOverrides, backoff, positiveInt, thinking, thinkingBudget, timeoutMs, workspaceHost } from './option-fields';
import type { agentReportSchema, TaskEvidence } from './agent';
import { scheduleTagSchema } from './schedule-tag';
import { checkpointsOptionSchema } from './checkpoints';
import { goalForkOfSchema } from './goal-fork';

/**
 * A goal's options: the workflow parses its input with this first thing (invalid input fails
 * the run at once, naming the field) and the client SDK before it starts anything. Defaults
 * are applied once, by workflows/goal-options.ts.
 */
export const goalOptionsSchema = lazySchema(() => z.strictObject({
  /** What to achieve, in words. */
  goal: z.string().trim().min(1, 'goal must not be empty').max(GOAL_TEXT_MAX, 'at most 100,000 characters (put a long specification in a file in the workspace)'),
  /** Absolute path of the directory every task agent works in. */
  workspace: absolutePath('workspace'),
  /** The host whose disk holds the workspace (SessionOptions.workspaceHost): setup and the agents' tools run there. */
  workspaceHost: workspaceHost.optional(),
  /** How long a call waits for the workspace host before it fails as "not polling" (default 60 s). */
  workspaceHostWaitMs: positiveInt.optional(),
  /** Model of the planner, the critic and the agents (default claude-sonnet-4-6). */
  model: z.string().min(1).optional(),
  /** Output limit of each call of the planner, the critic and the agents (default 4096). */
  maxTokens: positiveInt.optional(),
  /** Approval policy of the agents' tools, over the workspace's .keel/policy.json. */
  policy: PolicyConfig.optional(),
  /** No human will answer: `ask` becomes the policy's headless choice (default false). */
  headless: z.boolean().optional(),
  /** Start executing without waiting for approvePlan (default false). */
  autoApprove: z.boolean().optional(),
  /** Task agents running at once (default 2). */
  maxConcurrency: positiveInt.max(64).optional(),
  /** Attempts per task before it needs a human (default 2). */
  maxTaskAttempts: positiveInt.max(100).optional(),
  /** Proposals per planning round (default 3). */
  maxPlanAttempts: positiveInt.max(100).optional(),
  /** Critic reviews before the goal stops (default 3). */
  maxReviewCycles: positiveInt.max(100).optional(),
  /** How long a plan waits for approval before the goal stops (default: forever). */
  planApprovalTimeoutMs: timeoutMs,
  /** The goal's budget across the planner, the critic and every agent; a limit not named is none (default: no limits). */
  limits: budgetLimitsSchema.pick({ inputTokens: true, outputTokens: true, costUsd: true, wallClockMs: true }).partial().optional(),
  /** Each agent's model steps (default 25). */
  maxStepsPerTask: positiveInt.optional(),
  /** How long an agent's tool call waits for approval (default: forever). */
  approvalTimeoutMs: timeoutMs,
  /** Read-only tool calls of an agent's step run side by side up to this many (default 4). */
  maxParallelTools: positiveInt.max(64).optional(),
  /** Shorter waits between model retries than the retry table's (tests), for the agents' turns and the planner's and critic's rounds: each wait is the shorter of the two; one retry per entry, never more than the table's. Absent: the table's rows (machines/model-retry.ts). */
  retryBackoffMs: backoff,
  /** Conversation store directory; default `<workspace>/.keel/store` (the worker's KEEL_STORE_DIR wins). */
  storeDir: absolutePath('storeDir').optional(),
  /** Overrides of the model activity's options (tests shorten retries). */
  modelActivity: activityOverrides,
  /**
   * Extended thinking for the task agents: `budgetTokens` for every role, `byRole` per task
   * role (null turns it off for that role). The planner and the critic answer through a
   * forced tool call, which the API does not allow with thinking, so they never think.
   */
  thinking: z.strictObject({ budgetTokens: thinkingBudget.optional(), byRole: z.record(z.string(), thinking.nullable()).optional() }).optional(),
  /** Tasks the goal may hold in all, follow-ups included (default 50). */
  maxTasks: positiveInt.max(10_000).optional(),
  /** Continue as new once a run's history holds this many events (tests force it; default: only when suggested). */
  continueAsNewAfterEvents: positiveInt.min(20).nullable().optional(),
  /** Continue as new when the server suggests it (history size or length); default true. */
  continueAsNewWhenSuggested: z.boolean().optional(),
  /** Set by Keel's clients when they hold the encryption keys: a control that names nothing
   *  (resume, stop, reset, restart, approvePlan) must then carry its empty argument, which the
   *  encryption authenticates; one sent with no payload at all proves nothing and is refused (default false). */
  authenticatedControls: z.boolean().optional(),
  /** Set by a Keel schedule on the goals it starts (docs/schedules.md): the run checks the schedule's monthly budget before it calls any model. */
  schedule: scheduleTagSchema.optional(),
  /** Workspace checkpoints at the goal's start and at each task agent's end, for goal forks (docs/fork-and-rewind.md "Goals"; default false). */
  checkpoints: checkpointsOptionSchema.optional(),
  /** Set by a goal fork: the goal, point and plan this one starts from (its workspace is laid out from that point's checkpoint). */
  forkOf: goalForkOfSchema.optional(),
}));
/** What a goal is started with: the schema's input (defaults are filled in by workflows/goal-options.ts). */
export type GoalOptions = z.input<typeof goalOptionsSchema>;

export const approvePlanSchema = lazySchema(() => noPayloadSchema);
export const rejectPlanSchema = lazySchema(() => z.union([goalText.transform((t) => ({ feedback: t })), z.strictObject({ feedback: goalText })]));
export const resolveTaskSchema = lazySchema(() => z
  .strictObject({ taskId: z.string().min(1), action: z.enum(['retry', 'skip', 'edit']), instructions: goalText.optional() })
  .refine((v) => v.action !== 'edit' || v.instructions !== undefined, { message: 'edit needs instructions', path: ['instructions'] }));
export const cancelSchema = lazySchema(() => reasonSchema);

export type RejectPlanInput = z.input<typeof rejectPlanSchema>;
export type ResolveTaskInput = z.input<typeof resolveTaskSchema>;

/** What an accepted goal update answers: the goal's status afterwards. */
export interface GoalControlResult {
  status: GoalState['status'];
}
/** What an approve or deny answers: the goal's status, and the task agent the call was forwarded to. */
export type GoalApprovalResult = GoalControlResult & { callId: string; agentId: string };

/** The goal's controls, each a signal and an update typed by its payload's schema (./control.ts). */
export const GOAL_CONTROLS = {
  approvePlan: defineControl<GoalControlResult>()('approvePlan', approvePlanSchema),
  rejectPlan: defineControl<GoalControlResult>()('rejectPlan', rejectPlanSchema),
  resolveTask: defineControl<GoalControlResult>()('resolveTask', resolveTaskSchema),
  cancel: defineControl<GoalControlResult>()('cancel', cancelSchema),
  approve: defineControl<GoalApprovalResult>()('approve', approveSchema),
  deny: defineControl<GoalApprovalResult>()('deny', denySchema),
};
/** Its own task agents' reports (signal only: refused from anyone else, see workflows/goal.ts). */
export const agentReportSignal = defineSignal<[z.input<typeof agentReportSchema>]>('agentReport');
/** Every signal name a goal takes (agentReport from its own agents only). */
export const GOAL_SIGNALS = [...controlNames(GOAL_CONTROLS), agentReportSignal.name];

export const approvePlanSignal = GOAL_CONTROLS.approvePlan.signal;
export const rejectPlanSignal = GOAL_CONTROLS.rejectPlan.signal;
export const resolveTaskSignal = GOAL_CONTROLS.resolveTask.signal;
export const cancelSignal = GOAL_CONTROLS.cancel.signal;
export const approvePlanUpdate = GOAL_CONTROLS.approvePlan.update;
export const rejectPlanUpdate = GOAL_CONTROLS.rejectPlan.update;
export const resolveTaskUpdate = GOAL_CONTROLS.resolveTask.update;
export const cancelUpdate = GOAL_CONTROLS.cancel.update;
export const goalApproveSignal = GOAL_CONTROLS.approve.signal;
export const goalDenySignal = GOAL_CONTROLS.deny.signal;
export const goalApproveUpdate = GOAL_CONTROLS.approve.update;
export const goalDenyUpdate = GOAL_CONTROLS.deny.update;

/** A tool call of a task agent waiting for a human, as the goal shows it. */
export interface GoalPendingApproval extends PendingApproval {
  agentId: string;
  taskId: string;
}

export interface GoalUsageView {
  usage: Usage;
  limits: BudgetLimits;
  /** Usage of each task agent (by agent id), included in `usage`. */
  agents: Record<string, Usage>;
  exhaustion: { limit: string; allowed: number; used: number; over: number } | null;
}

export interface GoalStateView {
  goalId: string;
  status: GoalState['status'];
  /** Why it is blocked or stopped, or the summary when the goal is met. */
  reason: string | null;
  goal: GoalState;
  running: { taskId: string; agentId: string }[];
  pendingApprovals: GoalPendingApproval[];
  usage: GoalUsageView;
  nextEventSeq: number;
  /** The task agents' effective policy and where each part came from. */
  policy: PolicyView | null;
  /** What the goal waits for while its store or workspace host is away, or why its setup failed, in words; null when nothing. */
  waiting?: string | null;
}

export interface PlanView {
  planVersion: number;
  status: GoalState['status'];
  tasks: Task[];
  evidence: Record<string, TaskEvidence>;
}

export const planQuery = defineQuery<PlanView>('plan');
export const goalStateQuery = defineQuery<GoalStateView>('state');
export const goalUsageQuery = defineQuery<GoalUsageView>('usage');
export const goalPendingApprovalsQuery = defineQuery<GoalPendingApproval[]>('pendingApprovals');
/** The goal's event log by query (works after it completed too). */
export const goalEventsQuery = defineQuery<{ firstAvailable: number; entries: GoalLogEntry[] }, [z.input<typeof transcriptQuerySchema>?]>('events');
