// Goal forks over HTTP (docs/fork-and-rewind.md "Goals"): rows of the API's route table
// (server/routes.ts), so /openapi.json documents them from the same zod schema the SDK and
// the CLI use (workflows/protocol/goal-fork.ts), narrowed: an API caller names the point and
// optionally the plan, never the fork's workspace path nor its id (the fork's workspace goes
// beside its parent's). A refusal (a running task, an unknown point, an invalid plan, a goal
// without checkpoints) is a 409 problem with its code (server/app.ts maps CheckpointError).
import { z } from 'zod';
import type { KeelClient } from '../client/keel-client';
import { goalForkRequestFields, ONE_POINT, onePoint } from '../workflows/protocol/goal-fork';
import { readGoalCheckpoints } from '../client/goal-fork';
import { ProblemError } from './problem';
import type { Route } from './routes';

// The request's own schema, without the fields an API caller may not set (its refinement, one point, kept).
const forkBody = goalForkRequestFields.omit({ workspace: true, id: true }).refine(onePoint, { message: ONE_POINT, path: ['atPlanVersion'] });
const forkResponse = z.object({
  id: z.string(),
  workspace: z.string(),
  forkOf: z.object({ goalId: z.string(), point: z.union([z.object({ atPlanVersion: z.number().int() }), z.object({ afterTask: z.string() })]), planVersion: z.number().int(), kept: z.array(z.string()), rerun: z.array(z.string()) }),
});
const checkpointsResponse = z.looseObject({
  enabled: z.boolean(),
  planVersions: z.array(z.looseObject({ version: z.number().int(), manifest: z.string().nullable() })),
  finished: z.array(z.looseObject({ seq: z.number().int(), taskId: z.string(), outcome: z.string(), manifest: z.string().nullable() })),
});

const route = <B extends z.ZodType, Q extends z.ZodType>(r: Route<B, Q>): Route => r;

async function goalOnly(keel: KeelClient, id: string): Promise<void> {
  if ((await keel.kindOf(id)) !== 'goal') throw new ProblemError(404, 'not-found', `${id} is not a Keel goal`);
}

export const goalForkRoutes: Route[] = [
  route({
    method: 'get',
    path: '/api/goals/{id}/checkpoints',
    operationId: 'goalCheckpoints',
    summary: "A goal's fork points: its plan versions and finished task attempts, each with the workspace's checkpoint then",
    tag: 'goals',
    status: 200,
    response: checkpointsResponse,
    handler: async ({ keel, id }) => {
      await goalOnly(keel, id);
      return readGoalCheckpoints(keel.client, id);
    },
  }),
  route({
    method: 'post',
    path: '/api/goals/{id}/fork',
    operationId: 'forkGoal',
    summary: "A new goal from a plan version or a finished task, with the plan then or a changed one: the tasks done by then kept, the others run again, the files in a new workspace beside the parent's",
    tag: 'goals',
    body: forkBody,
    status: 201,
    response: forkResponse,
    handler: async ({ keel, id, body }) => {
      await goalOnly(keel, id);
      const fork = await keel.forkGoal(id, body);
      return { id: fork.id, workspace: fork.workspace, forkOf: fork.forkOf };
    },
  }),
];
