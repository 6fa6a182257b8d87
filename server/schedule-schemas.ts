// The schedule routes' request and response shapes (server/schedule-routes.ts): the schedule's
// spec is the protocol's schema (workflows/protocol/schedule.ts) with the goal's fields of
// POST /api/goals beside it, so the API accepts what the SDK and the CLI accept, and the
// OpenAPI document is generated from the same objects.
import { z } from 'zod';
import { backfillSchema, scheduleIdSchema, scheduleNoteSchema, scheduleSpecSchema, scheduleUpdateSchema, triggerSchema } from '../workflows/protocol/schedule';
import { startGoalBody } from './schemas';
import { scheduleRunSchema } from '../shared/schedule-run';

export const createScheduleBody = scheduleSpecSchema.extend({
  /** The schedule's id (default schedule-<uuid>); its runs are `<id>-<time>`. */
  id: scheduleIdSchema.optional(),
  ...startGoalBody.pick({ goal: true, workspace: true, createWorkspace: true, mode: true, autoApprove: true, model: true }).shape,
  /** Each run's own budget (the monthly budget is monthlyBudgetUsd). */
  runBudgetUsd: z.number().positive().max(1_000_000).optional(),
  /** How long a run's tool call waits for a human before it times out (default: forever). */
  approvalTimeoutMs: z.number().int().positive().optional(),
  /** How long a run's plan waits for approval before the run stops (default: forever). */
  planApprovalTimeoutMs: z.number().int().positive().optional(),
  paused: z.boolean().optional(),
  note: z.string().trim().min(1).max(2_000).optional(),
});
/** Optional: a pause, resume or trigger with no body at all is one without a note or overlap. */
export const scheduleNoteBody = scheduleNoteSchema.optional();
export const triggerBody = triggerSchema.optional();
export const backfillBody = backfillSchema;
/** PATCH: the fields to change (the SDK's KeelSchedule.update takes the same). */
export const updateScheduleBody = scheduleUpdateSchema;

const scheduleView = {
  id: z.string(),
  goal: z.string(),
  workspace: z.string().nullable(),
  spec: z.looseObject({ when: z.looseObject({ kind: z.string() }), timeZone: z.string(), overlap: z.string() }),
  paused: z.boolean(),
  note: z.string().nullable(),
  nextRuns: z.array(z.string()),
  recentRuns: z.array(z.object({ scheduledAt: z.string(), startedAt: z.string(), workflowId: z.string() })),
};
export const scheduleDetailsResponse = z.looseObject({
  ...scheduleView,
  actions: z.object({ taken: z.number().int(), skippedOverlap: z.number().int(), missedCatchupWindow: z.number().int(), running: z.array(z.string()) }).optional(),
  spend: z.object({ month: z.string(), spentUsd: z.number(), budgetUsd: z.number().nullable(), unknownRuns: z.number().int(), spent: z.boolean() }),
  runs: z.array(scheduleRunSchema),
});
export const scheduleListResponse = z.object({ items: z.array(scheduleDetailsResponse) });
export const scheduleCreatedResponse = z.object({ id: z.string(), kind: z.literal('schedule') });
export const scheduleChangedResponse = z.object({ id: z.string(), paused: z.boolean() });
export const scheduleDeletedResponse = z.object({ id: z.string(), deleted: z.literal(true) });
