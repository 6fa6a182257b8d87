// The API's JSON routes as data: each names its body, query and response schemas, so one
// table both serves requests (server/app.ts) and generates /openapi.json (server/openapi.ts).
import type { z } from 'zod';
import type { KeelClient } from '../client/keel-client';
import { approveUpdate } from '../workflows/definitions';
import { mapErrors } from '../client/errors';
import { resolveWorkspace, WorkspaceError } from '../client/workspace';
import { readInbox } from './inbox';
import { checkpointRoutes } from './checkpoint-routes';
import { goalForkRoutes } from './goal-fork-routes';
import { ProblemError } from './problem';
import { scheduleRoutes } from './schedule-routes';
import {
  answerBody,
  approveBody,
  controlResponse,
  denyBody,
  goalResponse,
  inboxResponse,
  listQuery,
  listResponse,
  messageBody,
  raiseBudgetBody,
  reasonBody,
  rejectPlanBody,
  resolveTaskBody,
  sessionResponse,
  startedResponse,
  startGoalBody,
  startSessionBody,
  steerBody,
} from './schemas';

export interface RouteContext<B, Q> {
  keel: KeelClient;
  /** The token holder's name: recorded as the approver. */
  approver: string;
  id: string;
  body: B;
  query: Q;
  idempotencyKey: string | null;
  /** With an Idempotency-Key: a digest of the request, so the key cannot stand for two requests. */
  requestDigest: string | undefined;
  defaults: { workspace: string };
}

export interface Route<B extends z.ZodType = z.ZodType, Q extends z.ZodType = z.ZodType> {
  method: 'get' | 'post' | 'patch' | 'delete';
  /** OpenAPI style: `/api/goals/{id}`. */
  path: string;
  operationId: string;
  summary: string;
  tag: 'list' | 'goals' | 'sessions' | 'approvals' | 'schedules';
  body?: B;
  query?: Q;
  idempotent?: boolean;
  status: 200 | 201;
  response: z.ZodType;
  handler(ctx: RouteContext<z.output<B>, z.output<Q>>): Promise<unknown>;
}

const route = <B extends z.ZodType, Q extends z.ZodType>(r: Route<B, Q>): Route => r;

async function kindOf(keel: KeelClient, id: string): Promise<'goal' | 'session'> {
  const kind = await keel.kindOf(id);
  if (kind === 'goal' || kind === 'session') return kind;
  throw new ProblemError(404, 'not-found', `${id} is ${kind ? `an ${kind} (answer it on its goal)` : 'not a Keel goal or session'}`);
}
async function goal(keel: KeelClient, id: string) {
  if ((await kindOf(keel, id)) !== 'goal') throw new ProblemError(404, 'not-found', `${id} is a session, not a goal`);
  return keel.getGoal(id);
}
async function session(keel: KeelClient, id: string) {
  if ((await kindOf(keel, id)) !== 'session') throw new ProblemError(404, 'not-found', `${id} is a goal, not a session`);
  return keel.getSession(id);
}
/**
 * A workspace a request names, by its real path: it must exist (or be created, when the
 * body says createWorkspace) and stay inside the server's workspace after symlinks.
 */
async function workspaceOf(requested: string | undefined, root: string, create: boolean | undefined): Promise<string> {
  try {
    return await resolveWorkspace(requested, { root, create: create ?? false });
  } catch (error) {
    if (!(error instanceof WorkspaceError)) throw error;
    throw new ProblemError(400, 'validation', error.message, { errors: [{ pointer: `/body/${error.field}`, message: error.message }] });
  }
}

const reasonOf = (b: { reason?: string | undefined } | undefined) => b?.reason;

export const routes: Route[] = [
  route({
    method: 'get',
    path: '/api/workflows',
    operationId: 'list',
    summary: 'Goals and sessions by their search attributes (waiting=true: everything waiting for a human)',
    tag: 'list',
    query: listQuery,
    status: 200,
    response: listResponse,
    handler: async ({ keel, query }) => ({
      items: await keel.list({
        ...(query.kind ? { kind: query.kind } : {}),
        ...(query.status ? { status: query.status } : {}),
        waitingForApproval: query.waiting === 'true',
        all: query.all === 'true',
        limit: query.limit ?? 100,
      }),
    }),
  }),
  route({
    method: 'get',
    path: '/api/inbox',
    operationId: 'inbox',
    summary: 'Everything waiting for a human: tool calls (exact arguments, diff for edits), plans, questions',
    tag: 'approvals',
    status: 200,
    response: inboxResponse,
    handler: async ({ keel }) => ({ items: await readInbox(keel) }),
  }),
  route({
    method: 'post',
    path: '/api/goals',
    operationId: 'startGoal',
    summary: 'Start a goal (the same Idempotency-Key gives the same goal)',
    tag: 'goals',
    body: startGoalBody,
    idempotent: true,
    status: 201,
    response: startedResponse,
    handler: async ({ keel, body, idempotencyKey, requestDigest, defaults }) => {
      const g = await keel.startGoal(body.goal, {
        ...(requestDigest ? { requestDigest } : {}),
        workspace: await workspaceOf(body.workspace, defaults.workspace, body.createWorkspace),
        ...(idempotencyKey ? { id: `goal-${idempotencyKey}` } : {}),
        ...(body.mode ? { policy: { mode: body.mode } } : {}),
        ...(body.autoApprove ? { autoApprove: true } : {}),
        ...(body.budgetUsd !== undefined ? { limits: { costUsd: body.budgetUsd } } : {}),
        ...(body.model ? { model: body.model } : {}),
      });
      return { id: g.id, kind: 'goal' };
    },
  }),
  route({
    method: 'get',
    path: '/api/goals/{id}',
    operationId: 'getGoal',
    summary: "A goal's state, plan (tasks, evidence), usage, waiting calls",
    tag: 'goals',
    status: 200,
    response: goalResponse,
    handler: async ({ keel, id }) => {
      const g = await goal(keel, id);
      const [state, plan] = await Promise.all([g.state(), g.plan()]);
      return { state, plan };
    },
  }),
  route({
    method: 'post',
    path: '/api/goals/{id}/plan/approve',
    operationId: 'approvePlan',
    summary: "Approve the goal's plan",
    tag: 'goals',
    status: 200,
    response: controlResponse,
    handler: async ({ keel, id }) => (await goal(keel, id)).approvePlan(),
  }),
  route({
    method: 'post',
    path: '/api/goals/{id}/plan/reject',
    operationId: 'rejectPlan',
    summary: 'Reject the plan with feedback for the next one',
    tag: 'goals',
    body: rejectPlanBody,
    status: 200,
    response: controlResponse,
    handler: async ({ keel, id, body }) => (await goal(keel, id)).rejectPlan(body.feedback),
  }),
  route({
    method: 'post',
    path: '/api/goals/{id}/tasks/resolve',
    operationId: 'resolveTask',
    summary: 'Retry, skip or edit a blocked task',
    tag: 'goals',
    body: resolveTaskBody,
    status: 200,
    response: controlResponse,
    handler: async ({ keel, id, body }) => (await goal(keel, id)).resolveTask(body.taskId, body.action, body.instructions),
  }),
  route({
    method: 'post',
    path: '/api/goals/{id}/cancel',
    operationId: 'cancelGoal',
    summary: 'Cancel a goal',
    tag: 'goals',
    body: reasonBody,
    status: 200,
    response: controlResponse,
    handler: async ({ keel, id, body }) => (await goal(keel, id)).cancel(reasonOf(body)),
  }),
  route({
    method: 'post',
    path: '/api/sessions',
    operationId: 'startSession',
    summary: 'Start a session (the same Idempotency-Key gives the same session)',
    tag: 'sessions',
    body: startSessionBody,
    idempotent: true,
    status: 201,
    response: startedResponse,
    handler: async ({ keel, body, idempotencyKey, requestDigest, defaults }) => {
      const s = await keel.startSession({
        ...(requestDigest ? { requestDigest } : {}),
        workspace: await workspaceOf(body.workspace, defaults.workspace, body.createWorkspace),
        ...(idempotencyKey ? { id: `session-${idempotencyKey}` } : {}),
        ...(body.mode ? { policy: { mode: body.mode } } : {}),
        ...(body.model ? { model: body.model } : {}),
        ...(body.system ? { system: body.system } : {}),
      });
      return { id: s.id, kind: 'session' };
    },
  }),
  route({
    method: 'get',
    path: '/api/sessions/{id}',
    operationId: 'getSession',
    summary: "A session's state and its conversation",
    tag: 'sessions',
    status: 200,
    response: sessionResponse,
    handler: async ({ keel, id }) => {
      const s = await session(keel, id);
      const [state, transcript] = await Promise.all([s.state(), s.transcript(0, 500)]);
      return { state, transcript };
    },
  }),
  route({
    method: 'post',
    path: '/api/sessions/{id}/messages',
    operationId: 'sendMessage',
    summary: 'Send a message (it waits behind a running turn)',
    tag: 'sessions',
    body: messageBody,
    status: 200,
    response: controlResponse,
    handler: async ({ keel, id, body }) => (await session(keel, id)).post(body.text, body.messageId),
  }),
  route({
    method: 'post',
    path: '/api/sessions/{id}/answer',
    operationId: 'answer',
    summary: "Answer the session's question",
    tag: 'approvals',
    body: answerBody,
    status: 200,
    response: controlResponse,
    handler: async ({ keel, id, body }) => (await session(keel, id)).answer(body.text),
  }),
  route({
    method: 'post',
    path: '/api/sessions/{id}/steer',
    operationId: 'steer',
    summary: 'Add guidance to the running turn',
    tag: 'sessions',
    body: steerBody,
    status: 200,
    response: controlResponse,
    handler: async ({ keel, id, body }) => (await session(keel, id)).steer(body.text, 'agent' in body && body.agent !== undefined ? { agent: body.agent } : {}),
  }),
  ...(['interrupt', 'pause', 'close'] as const).map((op) =>
    route({
      method: 'post',
      path: `/api/sessions/{id}/${op}`,
      operationId: op,
      summary: `${op[0]!.toUpperCase()}${op.slice(1)} the session`,
      tag: 'sessions',
      body: reasonBody,
      status: 200,
      response: controlResponse,
      handler: async ({ keel, id, body }) => (await session(keel, id))[op](reasonOf(body)),
    }),
  ),
  route({
    method: 'post',
    path: '/api/sessions/{id}/resume',
    operationId: 'resume',
    summary: 'Resume a paused or suspended session',
    tag: 'sessions',
    status: 200,
    response: controlResponse,
    handler: async ({ keel, id }) => (await session(keel, id)).resume(),
  }),
  route({
    method: 'post',
    path: '/api/sessions/{id}/budget',
    operationId: 'raiseBudget',
    summary: 'Raise (or remove with null) budget limits',
    tag: 'sessions',
    body: raiseBudgetBody,
    status: 200,
    response: controlResponse,
    handler: async ({ keel, id, body }) => (await session(keel, id)).raiseBudget(body),
  }),
  route({
    method: 'post',
    path: '/api/workflows/{id}/approve',
    operationId: 'approve',
    summary: "Approve a waiting tool call of a goal's agent or a session (scope session + rule: remember it)",
    tag: 'approvals',
    body: approveBody,
    status: 200,
    response: controlResponse,
    handler: async ({ keel, id, body, approver }) => {
      // The token's holder, proven by the approver key (shared/approver-proof.ts).
      const input = { ...body, approver: `${approver} (API token)`, proven: true };
      if ((await kindOf(keel, id)) === 'goal') return keel.getGoal(id).approve(body.callId, input);
      const s = keel.getSession(id);
      return mapErrors(id, 'approve', () => s.workflowHandle.executeUpdate(approveUpdate, { args: [input] }));
    },
  }),
  route({
    method: 'post',
    path: '/api/workflows/{id}/deny',
    operationId: 'deny',
    summary: 'Deny a waiting tool call',
    tag: 'approvals',
    body: denyBody,
    status: 200,
    response: controlResponse,
    handler: async ({ keel, id, body }) => {
      if ((await kindOf(keel, id)) === 'goal') return keel.getGoal(id).deny(body.callId, body.reason);
      return keel.getSession(id).deny(body.callId, body.reason);
    },
  }),
  // Fork, rewind and the turns' checkpoints (server/checkpoint-routes.ts).
  ...checkpointRoutes,
  // Goal forks (server/goal-fork-routes.ts).
  ...goalForkRoutes,
  // Goals on a schedule (server/schedule-routes.ts).
  ...scheduleRoutes(workspaceOf),
];

export { kindOf };
