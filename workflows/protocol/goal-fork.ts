// Goal forks in a goal's protocol (docs/fork-and-rewind.md "Goals"): what a forked goal is
// started with (`forkOf`), what a goal's task agent is given to checkpoint its workspace at its
// end, the request a client forks with (the SDK's, the CLI's and the HTTP route's, one schema)
// and the `goalCheckpoints` query a client forks from. Rules: machines/goal-fork.ts.
import { defineQuery } from '@temporalio/workflow';
import { z } from 'zod';
import { lazySchema } from '../../machines/lazy-schema';
import { forkedPlanSchema, goalForkPointSchema, keptTaskSchema, type FinishedAttempt, type GoalForkPoint, type PlanVersionPoint } from '../../machines/goal-fork';
import { taskInputSchema, type Task } from '../../machines/task-graph';
import type { PolicyConfig } from '../../machines/policy/config';
import { taskEvidenceSchema } from './agent';

const manifestId = z.string().regex(/^[0-9a-f]{64}$/);

/** What a forked goal starts from: its parent, the point, the plan, the tasks kept, the workspace's checkpoint. */
export const goalForkOfSchema = lazySchema(() =>
  z.strictObject({
    goalId: z.string().min(1).max(500),
    point: goalForkPointSchema,
    fromPlanVersion: z.number().int().positive(),
    planVersion: z.number().int().positive(),
    tasks: forkedPlanSchema,
    kept: z.array(keptTaskSchema).max(10_000),
    /** What the kept tasks' agents reported in detail (files, commands), by task id. */
    details: z.record(z.string(), taskEvidenceSchema).optional(),
    manifest: manifestId,
    changed: z.boolean(),
    /** The parent's conversation store's identity (the fork's is the same store). */
    storeId: z.string().min(1).max(200).optional(),
  }),
);
export type GoalForkOf = z.input<typeof goalForkOfSchema>;

export type { AgentCheckpoint, AgentCheckpointInput } from './agent';

/** A fork request's fields (the HTTP route takes fewer of them: server/goal-fork-routes.ts). */
export const goalForkRequestFields = lazySchema(() =>
  z.strictObject({
    atPlanVersion: z.number().int().positive().optional(),
    afterTask: z.string().min(1).max(64).optional(),
    /** The fork's plan (every task, as a planner proposes them); default: the parent's plan at that point. */
    plan: z.array(taskInputSchema).max(10_000).optional(),
    /** The fork's workspace (absolute, new or empty); default beside the parent's. */
    workspace: z.string().min(1).optional(),
    id: z.string().min(1).max(200).optional(),
  }),
);
/** A fork names exactly one point. */
export const onePoint = (r: { atPlanVersion?: number | undefined; afterTask?: string | undefined }): boolean => (r.atPlanVersion === undefined) !== (r.afterTask === undefined);
export const ONE_POINT = 'name one of atPlanVersion or afterTask';
/** A fork request: a plan version or a finished task, and optionally the fork's whole plan (checked as a planner's). */
export const goalForkRequestSchema = lazySchema(() => goalForkRequestFields.refine(onePoint, { message: ONE_POINT, path: ['atPlanVersion'] }));
export type GoalForkRequest = z.input<typeof goalForkRequestSchema>;

export interface GoalCheckpointsView {
  enabled: boolean;
  /** The workspace as the goal found it (null: not taken, or a fork, which starts from its fork point). */
  baseline: { manifest: string | null; at: string; error: string | null } | null;
  planVersions: PlanVersionPoint[];
  /** Task attempts that ended, in order, each with its agent's checkpoint. */
  finished: FinishedAttempt[];
  /** The goal's tasks now. */
  tasks: Task[];
  maxTasks: number;
  usedBytes: number;
  maxBytes: number;
  forkOf: { goalId: string; point: GoalForkPoint; fromPlanVersion: number; kept: string[] } | null;
  /** What a fork is started with: this goal's options, its effective policy and store. */
  base: { options: Record<string, unknown>; policy: PolicyConfig | null; storeId: string | null };
}
export const goalCheckpointsQuery = defineQuery<GoalCheckpointsView>('goalCheckpoints');
