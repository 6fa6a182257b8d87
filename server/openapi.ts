// /openapi.json, generated from the route table and the same zod schemas that validate
// requests (zod 4's z.toJSONSchema: no second description of the API to drift).
import { z } from 'zod';
import type { Route } from './routes';
import { GOAL_CONTROLS } from '../workflows/protocol/goal';
import { agUiRunInput, problemSchema } from './schemas';
import { MAX_BODY_BYTES } from './body-limit';
import { EVENTS_TOPIC, MODEL_TOPIC } from '../workflows/protocol/topics';

type Json = Record<string, unknown>;

/** What a zod refinement checks that JSON Schema cannot say by itself, said in JSON Schema. */
const REFINEMENTS = new Map<z.ZodType, Json>([[GOAL_CONTROLS.resolveTask.input, { anyOf: [{ properties: { action: { enum: ['retry', 'skip'] } } }, { required: ['instructions'] }] }]]);

const schemaOf = (s: z.ZodType, io: 'input' | 'output'): Json => {
  const { $schema: _drop, ...rest } = z.toJSONSchema(s, {
    io,
    unrepresentable: 'any',
    target: 'draft-2020-12',
    override: (ctx) => {
      const extra = REFINEMENTS.get(ctx.zodSchema as unknown as z.ZodType);
      if (extra) Object.assign(ctx.jsonSchema, extra);
    },
  }) as Json;
  return rest;
};

/** One Server-Sent Event as schemathesis and clients see it. */
const sseEvent = (events: string[]): Json => ({
  type: 'object',
  properties: { event: { type: 'string', enum: events }, data: { type: 'string' }, id: { type: 'string', pattern: '^[0-9]+$' } },
  required: ['data'],
});

const problem = (description: string) => ({ description, content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } } });
const tooLarge = () => problem(`The body is over ${MAX_BODY_BYTES / 1024 / 1024} MiB`);

export function openApiDocument(routes: readonly Route[], version: string): Json {
  const paths: Record<string, Json> = {};
  for (const r of routes) {
    const parameters: Json[] = [];
    if (r.path.includes('{id}')) parameters.push({ name: 'id', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9._:@-]{1,200}$' } });
    if (r.idempotent) {
      parameters.push({
        name: 'Idempotency-Key',
        in: 'header',
        required: false,
        description: 'Becomes the workflow id: a retried request with the same key gives the same workflow; the same key with another body is a 422.',
        schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,100}$' },
      });
    }
    if (r.query) {
      const q = schemaOf(r.query, 'input') as { properties?: Record<string, Json> };
      for (const [name, schema] of Object.entries(q.properties ?? {})) parameters.push({ name, in: 'query', required: false, schema });
    }
    const op: Json = {
      operationId: r.operationId,
      summary: r.summary,
      tags: [r.tag],
      parameters,
      responses: {
        [String(r.status)]: { description: 'OK', content: { 'application/json': { schema: schemaOf(r.response, 'output') } } },
        '400': problem('Invalid input: `errors` names each field'),
        '401': problem('No or wrong bearer token'),
        ...(r.path.includes('{id}') ? { '404': problem(r.tag === 'schedules' ? 'No such schedule' : 'No such goal or session') } : {}),
        ...(r.path.includes('{id}') && r.tag !== 'schedules' ? { '409': problem("Refused by the workflow: `reason` is the state machine's") } : {}),
        ...(r.operationId === 'createSchedule' ? { '409': problem('A schedule with this id exists') } : {}),
        '405': problem('Method not allowed'),
        ...(r.body ? { '413': tooLarge(), '415': problem('The body is not JSON') } : {}),
        ...(r.idempotent ? { '422': problem('The Idempotency-Key was used for another request (another body)') } : {}),
        '503': problem('Temporal cannot be reached'),
        '504': problem('The workflow did not answer in time (is a worker running?)'),
      },
    };
    if (r.status === 201) {
      // The started workflow's id feeds every operation on it (schemathesis' stateful phase follows these).
      const kind = r.path.split('/')[2];
      const targets = routes.filter((t) => t.path.startsWith(`/api/${kind}/{id}`) || (kind !== 'schedules' && t.path.startsWith('/api/workflows/{id}')));
      (op.responses as Record<string, Json>)['201']!.links = Object.fromEntries(targets.map((t) => [t.operationId, { operationId: t.operationId, parameters: { id: '$response.body#/id' } }]));
    }
    if (r.body) op.requestBody = { required: !r.body.safeParse(undefined).success, content: { 'application/json': { schema: schemaOf(r.body, 'input') } } };
    (paths[r.path] ??= {})[r.method] = op;
  }
  paths['/api/workflows/{id}/events'] = {
    get: {
      operationId: 'events',
      summary: "A goal's or session's stream as Server-Sent Events; `id:` is the stream offset, resume with Last-Event-ID",
      tags: ['list'],
      parameters: [
        { name: 'id', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9._:@-]{1,200}$' } },
        { name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string', pattern: '^[0-9]{1,15}$' } },
        { name: 'from', in: 'query', required: false, schema: { type: 'string', pattern: '^[0-9]{1,15}$' } },
      ],
      responses: {
        '200': { description: '`event: events` (the event log) and `event: model` (streamed text), `event: end` when the workflow ended', content: { 'text/event-stream': { schema: sseEvent([EVENTS_TOPIC, MODEL_TOPIC, 'end']) } } },
        '400': problem('Bad offset'),
        '401': problem('No or wrong bearer token'),
        '404': problem('No such goal or session'),
        '405': problem('Method not allowed'),
        '409': problem('The workflow cannot be read'),
        '503': problem('Temporal cannot be reached'),
        '504': problem('The workflow did not answer in time'),
      },
    },
  };
  paths['/api/sessions/{id}/ag-ui'] = {
    post: {
      operationId: 'agUiRun',
      summary: 'AG-UI: run the session with the last user message of RunAgentInput; the answer is AG-UI events as SSE',
      tags: ['sessions'],
      parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9._:@-]{1,200}$' } }],
      requestBody: { required: true, content: { 'application/json': { schema: schemaOf(agUiRunInput, 'input') } } },
      responses: {
        '200': { description: 'AG-UI events (RUN_STARTED … RUN_FINISHED)', content: { 'text/event-stream': { schema: sseEvent(['message']) } } },
        '400': problem('Not a RunAgentInput, or no user message'),
        '401': problem('No or wrong bearer token'),
        '404': problem('No such session'),
        '405': problem('Method not allowed'),
        '409': problem('The session refused the message'),
        '413': tooLarge(),
        '415': problem('The body is not JSON'),
        '503': problem('Temporal cannot be reached'),
        '504': problem('The session did not answer in time'),
      },
    },
  };
  paths['/api/ag-ui'] = {
    post: {
      operationId: 'agUiThreadRun',
      summary: 'AG-UI for a client with many threads (CopilotKit): each threadId runs its own session, agui-<threadId>, started on its first run',
      tags: ['sessions'],
      parameters: [],
      requestBody: { required: true, content: { 'application/json': { schema: schemaOf(agUiRunInput, 'input') } } },
      responses: {
        '200': { description: 'AG-UI events (RUN_STARTED … RUN_FINISHED)', content: { 'text/event-stream': { schema: sseEvent(['message']) } } },
        '400': problem('Not a RunAgentInput, or a threadId that cannot name a session'),
        '401': problem('No or wrong bearer token'),
        '405': problem('Method not allowed'),
        '409': problem('The session refused the message'),
        '413': tooLarge(),
        '415': problem('The body is not JSON'),
        '503': problem('Temporal cannot be reached'),
        '504': problem('The session did not answer in time'),
      },
    },
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'Keel API',
      version,
      description: 'Goals and sessions of Keel: list, inbox, start, answer, control, follow. Every /api request needs `Authorization: Bearer <token>`.',
    },
    servers: [{ url: '/' }],
    security: [{ bearer: [] }],
    tags: [{ name: 'list' }, { name: 'goals' }, { name: 'sessions' }, { name: 'approvals' }, { name: 'schedules' }],
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: { Problem: schemaOf(problemSchema, 'output') },
    },
  };
}
