// The goal's (workflows/goal.ts) and its task agents' (workflows/agent.ts) messages in and
// out: signals, updates and queries (re-exported by workflows/definitions.ts).
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { z } from 'zod';
import { usageSchema } from '../machines/budget';
import { limitKindSchema } from '../machines/tool-result';
import type { BudgetLimits, GoalState, Task, Usage } from '../machines/index';
import { goalText, noPayloadSchema, reasonSchema, type ApproveInput, type DenyInput, type ReasonInput, type TranscriptQueryInput } from './control-schemas';
import type { GoalLogEntry } from './log-entries';
import type { PendingApproval, PolicyView } from './definitions';
import { lazySchema } from '../machines/lazy-schema';

// ---- goals (workflows/goal.ts) and their task agents (workflows/agent.ts) --------------
// The same names as the session where the operation is the same (`approve`, `deny`,
// `state`, `pendingApprovals`, `usage`, `events`); payloads are typed by hand as easily.

export const approvePlanSchema = lazySchema(() => noPayloadSchema);
export const rejectPlanSchema = lazySchema(() => z.union([goalText.transform((t) => ({ feedback: t })), z.strictObject({ feedback: goalText })]));
export const resolveTaskSchema = lazySchema(() => z
  .strictObject({ taskId: z.string().min(1), action: z.enum(['retry', 'skip', 'edit']), instructions: goalText.optional() })
  .refine((v) => v.action !== 'edit' || v.instructions !== undefined, { message: 'edit needs instructions', path: ['instructions'] }));
export const cancelSchema = lazySchema(() => reasonSchema);

export type RejectPlanInput = z.input<typeof rejectPlanSchema>;
export type ResolveTaskInput = z.input<typeof resolveTaskSchema>;

export const approvePlanSignal = defineSignal<[]>('approvePlan');
export const rejectPlanSignal = defineSignal<[RejectPlanInput]>('rejectPlan');
export const resolveTaskSignal = defineSignal<[ResolveTaskInput]>('resolveTask');
export const cancelSignal = defineSignal<[ReasonInput]>('cancel');

/** What an accepted goal update answers: the goal's status afterwards. */
export interface GoalControlResult {
  status: GoalState['status'];
}
export const approvePlanUpdate = defineUpdate<GoalControlResult, []>('approvePlan');
export const rejectPlanUpdate = defineUpdate<GoalControlResult, [RejectPlanInput]>('rejectPlan');
export const resolveTaskUpdate = defineUpdate<GoalControlResult, [ResolveTaskInput]>('resolveTask');
export const cancelUpdate = defineUpdate<GoalControlResult, [ReasonInput]>('cancel');
export const goalApproveUpdate = defineUpdate<GoalControlResult & { callId: string; agentId: string }, [ApproveInput]>('approve');
export const goalDenyUpdate = defineUpdate<GoalControlResult & { callId: string; agentId: string }, [DenyInput]>('deny');

/** A tool call of a task agent waiting for a human, as the goal shows it. */
export interface GoalPendingApproval extends PendingApproval {
  agentId: string;
  taskId: string;
}

/** Evidence of one task attempt. */
export const taskEvidenceSchema = lazySchema(() => z.strictObject({
  filesChanged: z.array(z.string()).max(10_000),
  commands: z
    .array(z.strictObject({ command: z.string(), exitCode: z.number().int().nullable(), status: z.string(), refused: z.string().max(200).optional(), limit: limitKindSchema.optional() }))
    .max(10_000),
  summary: z.string().nullable(),
}));
export type TaskEvidence = z.infer<typeof taskEvidenceSchema>;

const pendingApprovalSchema = lazySchema(() => z.strictObject({
  callId: z.string().min(1),
  name: z.string().min(1),
  input: z.json(),
  reason: z.string().nullable(),
  turnId: z.string().min(1),
}));

/**
 * What a task agent tells its goal (signal `agentReport`): cumulative usage, its waiting
 * calls and the evidence so far. `token` is the secret the goal gave this agent at start
 * (see workflows/goal.ts, "reports"): a report without it is recorded and ignored.
 */
export const agentReportSchema = lazySchema(() => z.strictObject({
  agentId: z.string().min(1),
  taskId: z.string().min(1),
  attempt: z.number().int().positive(),
  token: z.string().min(1),
  usage: usageSchema,
  pendingApprovals: z.array(pendingApprovalSchema).max(1_000),
  evidence: taskEvidenceSchema.optional(),
}));
export type AgentReport = z.infer<typeof agentReportSchema>;
export const agentReportSignal = defineSignal<[AgentReport]>('agentReport');
/** Every signal name a goal takes (agentReport from its own agents only). */
export const GOAL_SIGNALS = ['approvePlan', 'rejectPlan', 'resolveTask', 'cancel', 'approve', 'deny', 'agentReport'] as const;
/** Every signal name a task agent takes (from its goal). */
export const AGENT_SIGNALS = ['approve', 'deny'] as const;

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
export const goalEventsQuery = defineQuery<{ firstAvailable: number; entries: GoalLogEntry[] }, [TranscriptQueryInput?]>('events');
