// Fork and rewind over HTTP (docs/fork-and-rewind.md): rows of the API's route table
// (server/routes.ts), so /openapi.json documents them from the same zod schemas. The
// request bodies are the protocol's (workflows/protocol/checkpoints.ts), narrowed: an API
// caller names the turn, never the fork's workspace path nor its id (the fork's workspace
// goes beside its parent's), and the rewind's approver is the token's holder, proven by the
// server's codec — never taken from the body.
import { z } from 'zod';
import type { KeelClient } from '../client/keel-client';
import { forkRequestSchema, rewindSchema } from '../workflows/protocol/checkpoints';
import { ProblemError } from './problem';
import type { Route } from './routes';

const forkBody = forkRequestSchema.pick({ atTurn: true, checkpointId: true });
const rewindBody = rewindSchema.pick({ toTurn: true, files: true });
const forkResponse = z.object({ id: z.string(), workspace: z.string(), forkOf: z.object({ sessionId: z.string(), turn: z.number().int(), checkpointId: z.string() }) });
const rewindResponse = z.looseObject({ toTurn: z.number().int(), setAside: z.number().int(), status: z.string() });
const checkpointsResponse = z.looseObject({
  enabled: z.boolean(),
  turns: z.array(z.looseObject({ id: z.string(), turn: z.number().int() })),
  forks: z.array(z.object({ id: z.string(), turn: z.number().int(), status: z.string().nullable() })),
});
const diffQuery = z.strictObject({ from: z.coerce.number().int().min(0), to: z.coerce.number().int().min(0) });
const diffResponse = z.object({ added: z.array(z.string()), removed: z.array(z.string()), changed: z.array(z.string()) });

/**
 * A session's forks, for the console's lineage: sessions named as a fork of it is named
 * (client/session-fork.ts: `<parent>-fork<turn>-<8 hex>`, what the API and console always
 * use). A fork the SDK started with an id of its own is not listed here (its own page says
 * whose fork it is).
 */
async function forksOf(keel: KeelClient, id: string): Promise<{ id: string; turn: number; status: string | null }[]> {
  const mine = new RegExp(`^${id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-fork(\\d+)-[0-9a-f]{8}$`);
  const sessions = await keel.list({ kind: 'session', all: true, limit: 500 });
  return sessions.flatMap((e) => {
    const m = mine.exec(e.id);
    return m ? [{ id: e.id, turn: Number(m[1]), status: e.status }] : [];
  });
}

const route = <B extends z.ZodType, Q extends z.ZodType>(r: Route<B, Q>): Route => r;

async function session(keel: KeelClient, id: string) {
  if ((await keel.kindOf(id)) !== 'session') throw new ProblemError(404, 'not-found', `${id} is not a Keel session`);
  return keel.getSession(id);
}

export const checkpointRoutes: Route[] = [
  route({
    method: 'get',
    path: '/api/sessions/{id}/checkpoints',
    operationId: 'checkpoints',
    summary: "A session's turns with their workspace checkpoints, and the turns rewinds set aside",
    tag: 'sessions',
    status: 200,
    response: checkpointsResponse,
    handler: async ({ keel, id }) => ({ ...(await (await session(keel, id)).checkpoints()), forks: await forksOf(keel, id) }),
  }),
  route({
    method: 'get',
    path: '/api/sessions/{id}/diff',
    operationId: 'diffTurns',
    summary: "Files added, removed and changed between two turns' checkpoints (read from the session's store by the server, as `keel session diff` does)",
    tag: 'sessions',
    query: diffQuery,
    status: 200,
    response: diffResponse,
    handler: async ({ keel, id, query }) => (await session(keel, id)).diff(query.from, query.to),
  }),
  route({
    method: 'post',
    path: '/api/sessions/{id}/fork',
    operationId: 'fork',
    summary: "A new session from a turn (atTurn, or a checkpoint by id): the conversation up to it, the files as they were then in a new workspace beside the parent's",
    tag: 'sessions',
    body: forkBody,
    status: 201,
    response: forkResponse,
    handler: async ({ keel, id, body }) => {
      if ((body.atTurn === undefined) === (body.checkpointId === undefined)) {
        throw new ProblemError(400, 'validation', 'name one of atTurn or checkpointId', { errors: [{ pointer: '/body/atTurn', message: 'name one of atTurn or checkpointId' }] });
      }
      await session(keel, id);
      const fork = await keel.forkSession(id, body);
      return { id: fork.id, workspace: fork.workspace, forkOf: fork.forkOf };
    },
  }),
  route({
    method: 'post',
    path: '/api/sessions/{id}/rewind',
    operationId: 'rewind',
    summary: 'Back to a turn: later turns set aside (forkable), files restored unless files is false; the session waits for the next message',
    tag: 'sessions',
    body: rewindBody,
    status: 200,
    response: rewindResponse,
    handler: async ({ keel, id, body, approver }) => (await session(keel, id)).rewind(body.toTurn, { files: body.files ?? true, approver: `${approver} (API token)` }),
  }),
];
