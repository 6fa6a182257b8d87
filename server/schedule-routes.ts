// The API's schedule routes (docs/schedules.md), as data like server/routes.ts: list, create,
// show (runs and spend), pause and resume with a note, trigger, backfill, delete.
import type { z } from 'zod';
import { InvalidInputError } from '../client/errors';
import type { KeelClient } from '../client/keel-client';
import { ScheduleExistsError } from '../client/schedules';
import { ProblemError } from './problem';
import type { Route } from './routes';
import {
  backfillBody,
  createScheduleBody,
  scheduleChangedResponse,
  scheduleCreatedResponse,
  scheduleDeletedResponse,
  scheduleDetailsResponse,
  scheduleListResponse,
  scheduleNoteBody,
  triggerBody,
  updateScheduleBody,
} from './schedule-schemas';

type Resolve = (requested: string | undefined, root: string, create: boolean | undefined) => Promise<string>;

/** The SDK's refusals as problems: a bad spec is the caller's (400), an id in use a conflict (409). */
async function problems<T>(body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (error) {
    if (error instanceof InvalidInputError) throw new ProblemError(400, 'validation', error.message, { errors: error.problems.map((p) => ({ pointer: `/body/${p.split(":")[0]!.replace(/\./g, '/')}`, message: p })) });
    if (error instanceof ScheduleExistsError) throw new ProblemError(409, 'rejected', error.message, { reason: error.message });
    throw error;
  }
}

// Typed like server/routes.ts's `route` (not imported: that module imports this one).
const route = <B extends z.ZodType, Q extends z.ZodType>(r: Route<B, Q>): Route => r;

const details = (keel: KeelClient, id: string) => keel.schedules.get(id).details();

export function scheduleRoutes(workspaceOf: Resolve): Route[] {
  return [
    route({
      method: 'get',
      path: '/api/schedules',
      operationId: 'listSchedules',
      summary: "Keel's schedules, each with its next run, last runs and this month's spend",
      tag: 'schedules',
      status: 200,
      response: scheduleListResponse,
      handler: async ({ keel }) => ({ items: await Promise.all((await keel.schedules.list()).map((s) => details(keel, s.id))) }),
    }),
    route({
      method: 'post',
      path: '/api/schedules',
      operationId: 'createSchedule',
      summary: 'Create a schedule that starts a goal (cron, interval or calendar, in a time zone; overlap policy; monthly budget)',
      tag: 'schedules',
      body: createScheduleBody,
      status: 201,
      response: scheduleCreatedResponse,
      handler: async ({ keel, body, defaults }) => {
        const { id, goal, workspace, createWorkspace, mode, autoApprove, model, runBudgetUsd, approvalTimeoutMs, planApprovalTimeoutMs, paused, note, ...spec } = body;
        const s = await problems(async () =>
          keel.schedules.create({
            ...spec,
            ...(id !== undefined ? { id } : {}),
            goal,
            ...(paused ? { paused } : {}),
            ...(note !== undefined ? { note } : {}),
            goalOptions: {
              workspace: await workspaceOf(workspace, defaults.workspace, createWorkspace),
              ...(mode ? { policy: { mode } } : {}),
              ...(autoApprove ? { autoApprove: true } : {}),
              ...(model ? { model } : {}),
              ...(runBudgetUsd !== undefined ? { limits: { costUsd: runBudgetUsd } } : {}),
              ...(approvalTimeoutMs !== undefined ? { approvalTimeoutMs } : {}),
              ...(planApprovalTimeoutMs !== undefined ? { planApprovalTimeoutMs } : {}),
            },
          }),
        );
        return { id: s.id, kind: 'schedule' };
      },
    }),
    route({
      method: 'get',
      path: '/api/schedules/{id}',
      operationId: 'getSchedule',
      summary: "A schedule: spec, state and note, next runs, the server's counts (started, skipped for overlap, missed), this month's runs and spend",
      tag: 'schedules',
      status: 200,
      response: scheduleDetailsResponse,
      handler: ({ keel, id }) => details(keel, id),
    }),
    route({
      method: 'patch',
      path: '/api/schedules/{id}',
      operationId: 'updateSchedule',
      summary: "Change a schedule's timing (when, time zone), overlap, catch-up window, monthly budget (null removes it) or goal text; runs already started keep theirs",
      tag: 'schedules',
      body: updateScheduleBody,
      status: 200,
      response: scheduleDetailsResponse,
      handler: async ({ keel, id, body }) => {
        await problems(() => keel.schedules.get(id).update(body));
        return details(keel, id);
      },
    }),
    ...(['pause', 'resume'] as const).map((op) =>
      route({
        method: 'post',
        path: `/api/schedules/{id}/${op}`,
        operationId: `${op}Schedule`,
        summary: op === 'pause' ? 'Pause the schedule (the note says why)' : 'Resume the schedule',
        tag: 'schedules',
        body: scheduleNoteBody,
        status: 200,
        response: scheduleChangedResponse,
        handler: async ({ keel, id, body }) => {
          await keel.schedules.get(id)[op](body?.note);
          return { id, paused: op === 'pause' };
        },
      }),
    ),
    route({
      method: 'post',
      path: '/api/schedules/{id}/trigger',
      operationId: 'triggerSchedule',
      summary: "Run the schedule's goal now (its overlap policy holds unless another is given)",
      tag: 'schedules',
      body: triggerBody,
      status: 200,
      response: scheduleChangedResponse,
      handler: async ({ keel, id, body }) => {
        const s = keel.schedules.get(id);
        await s.trigger(body?.overlap);
        return { id, paused: (await s.describe()).paused };
      },
    }),
    route({
      method: 'post',
      path: '/api/schedules/{id}/backfill',
      operationId: 'backfillSchedule',
      summary: 'Runs for the times the spec names between from and to, as if the schedule had run then',
      tag: 'schedules',
      body: backfillBody,
      status: 200,
      response: scheduleChangedResponse,
      handler: async ({ keel, id, body }) => {
        const s = keel.schedules.get(id);
        await problems(() => s.backfill(body));
        return { id, paused: (await s.describe()).paused };
      },
    }),
    route({
      method: 'delete',
      path: '/api/schedules/{id}',
      operationId: 'deleteSchedule',
      summary: 'Delete the schedule (its runs are left as they are)',
      tag: 'schedules',
      status: 200,
      response: scheduleDeletedResponse,
      handler: async ({ keel, id }) => {
        await keel.schedules.get(id).delete();
        return { id, deleted: true };
      },
    }),
  ];
}
