// The Hono app of `keel serve`: the JSON routes of server/routes.ts behind a bearer token,
// the event stream as Server-Sent Events, the AG-UI adapter, /openapi.json and the console.
// Hono: small, typed, Web-standard Request/Response (the same code runs under Node via
// @hono/node-server), with an SSE helper — and no plugin system to learn for eight routes.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isGrpcServiceError } from '@temporalio/client';
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { cors } from 'hono/cors';
import { streamSSE } from 'hono/streaming';
import type { z } from 'zod';
import { ConnectionError, IdempotencyKeyReusedError, InvalidInputError, NoAnswerError, NotFoundError, UpdateRejectedError } from '../client/errors';
import { CheckpointError } from '../client/checkpoints';
import type { KeelClient } from '../client/keel-client';
import { followStream } from '../client/events';
import { agUiRun } from './ag-ui';
import { forkOfRun, forkThread } from './ag-ui-fork';
import { authenticate, type TokenEntry } from './auth';
import { consoleScript } from './console-bundle';
import type { LoginCodes } from './login';
import { openApiDocument } from './openapi';
import { MAX_BODY_BYTES } from './body-limit';
import { ProblemError, validationProblem } from './problem';
import { type Route, routes } from './routes';
import { agUiThreadIdSchema, idempotencyKeySchema, workflowIdSchema } from './schemas';

/** How long one API request may wait for Temporal (and the workflow's worker) to answer. */
export const REQUEST_DEADLINE_MS = 15_000;
/**
 * The largest request body any route reads. A session's longest input (a message, a goal,
 * AG-UI's run with its history) fits many times over; without a bound, one token holder's
 * 200 MB body held the server's memory and every other request waited behind it.
 */
export { MAX_BODY_BYTES } from './body-limit';

export interface AppOptions {
  keel: KeelClient;
  tokens: readonly TokenEntry[];
  /** Where goals and sessions work when a request names no workspace. */
  workspace: string;
  version?: string;
  /** One-time login codes (`keel serve` prints a link with one at every start). */
  login?: LoginCodes;
  /** Browser origins allowed to call the API from their own pages (CORS), e.g. a CopilotKit app. */
  corsOrigins?: readonly string[];
}

type Env = { Variables: { holder: TokenEntry } };

const consoleDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'console');
const ASSETS: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/console/style.css': { file: 'style.css', type: 'text/css; charset=utf-8' },
};

export function createApp(options: AppOptions): Hono<Env> {
  const app = new Hono<Env>();
  const doc = openApiDocument(routes, options.version ?? '0.1.0');
  const assets = Object.fromEntries(Object.entries(ASSETS).map(([p, a]) => [p, { body: readFileSync(path.join(consoleDir, a.file), 'utf8'), type: a.type }]));
  assets['/console/app.js'] = { body: consoleScript(), type: 'text/javascript; charset=utf-8' };

  app.use('*', async (c, next) => {
    await next();
    c.header('X-Content-Type-Options', 'nosniff');
    c.header('Referrer-Policy', 'no-referrer');
    c.header('Cache-Control', 'no-store');
    c.header('Content-Security-Policy', "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'");
  });

  // Before any route reads it: a body over the limit (by Content-Length, or as it streams in) is a 413.
  app.use(
    '*',
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: (c) => problem(c.req.path, new ProblemError(413, 'too-large', `request bodies are limited to ${MAX_BODY_BYTES / 1024 / 1024} MiB`)),
    }),
  );

  for (const [p, a] of Object.entries(assets)) app.get(p, (c) => c.body(a.body, 200, { 'Content-Type': a.type }));
  app.get('/openapi.json', (c) => c.json(doc));
  // The printed login link's code, traded once for a token the browser keeps.
  app.post('/login', async (c) => {
    const body = await readJson(c);
    const got = options.login?.redeem((body as { code?: unknown } | undefined)?.code);
    if (!got) return problem(c.req.path, new ProblemError(401, 'unauthorized', 'this login code is unknown, used or expired: `keel serve` prints a new one at each start'));
    return c.json(got);
  });

  // Pages on the listed origins only (exact match), with the token in the Authorization header
  // (no cookies: credentials are never allowed). Preflights are answered before the token check.
  if (options.corsOrigins?.length) {
    const allowed = new Set(options.corsOrigins);
    app.use(
      '/api/*',
      cors({
        origin: (origin) => (allowed.has(origin) ? origin : null),
        allowMethods: ['GET', 'POST', 'PATCH', 'DELETE'],
        allowHeaders: ['Authorization', 'Content-Type', 'Accept', 'Last-Event-ID', 'Idempotency-Key'],
        exposeHeaders: ['Location'],
        maxAge: 600,
      }),
    );
  }

  // Every /api request carries the token; there are no cookies, so a page elsewhere cannot
  // ride on a logged-in browser (no CSRF).
  app.use('/api/*', async (c, next) => {
    const holder = authenticate(options.tokens, c.req.header('authorization'));
    if (!holder) {
      return problem(c.req.path, new ProblemError(401, 'unauthorized', 'send Authorization: Bearer <token> (sign in with the link `keel serve` prints at start, or KEEL_API_TOKEN)'));
    }
    c.set('holder', holder);
    await next();
  });

  for (const r of routes) {
    const honoPath = r.path.replace(/\{(\w+)\}/g, ':$1');
    app.on(r.method.toUpperCase(), honoPath, async (c) => {
      const id = r.path.includes('{id}') ? parseWith(workflowIdSchema, c.req.param('id'), 'path', 'id') : '';
      const query = r.query ? parseQuery(r.query, c) : undefined;
      const body = r.body ? parseWith(r.body, await readJson(c), 'body') : undefined;
      const keyHeader = r.idempotent ? c.req.header('idempotency-key') : undefined;
      const idempotencyKey = keyHeader === undefined ? null : parseWith(idempotencyKeySchema, keyHeader, 'header', 'Idempotency-Key');
      // The request the key stands for: the same key with another body is refused (422), not
      // answered with the first request's workflow (draft-ietf-httpapi-idempotency-key-header).
      const requestDigest = idempotencyKey === null ? undefined : digestOf(r.path, body);
      // A workflow whose worker is down would keep the request open for ever: bounded here.
      const result = await options.keel.client.connection.withDeadline(Date.now() + REQUEST_DEADLINE_MS, () =>
        r.handler({ keel: options.keel, approver: c.get('holder').name, id, body, query, idempotencyKey, requestDigest, defaults: { workspace: options.workspace } }),
      );
      if (r.status === 201) c.header('Location', `/api/${(result as { kind: string }).kind}s/${(result as { id: string }).id}`);
      return c.json(result as object, r.status);
    });
  }

  app.get('/api/workflows/:id/events', async (c) => {
    const id = parseWith(workflowIdSchema, c.req.param('id'), 'path', 'id');
    const from = startOffset(c);
    // Goals, sessions and a goal's task agents: an agent's stream has its model text, tool
    // calls and results, which the console's agent page shows (it answered 404 before).
    // Goals, sessions and agents are followed alike (their handles' `events`): the stream's
    // first read goes beside the describe that says what the id is, not after it (one round
    // trip less before a new page's first event), and is dropped if the id is none of them.
    const abort = new AbortController();
    const items = followStream<unknown>(options.keel.client, id, { from, signal: abort.signal });
    const first = items.next();
    first.catch(() => undefined);
    const kind = await options.keel.kindOf(id).catch((error: unknown) => {
      abort.abort();
      throw error;
    });
    if (kind === null) {
      abort.abort();
      throw new ProblemError(404, 'not-found', `${id} is not a Keel goal, session or agent`);
    }
    return streamSSE(c, async (stream) => {
      stream.onAbort(() => abort.abort());
      // A comment now and then keeps proxies from closing a quiet stream.
      const ping = setInterval(() => void stream.write(': ping\n\n').catch(() => abort.abort()), 15_000);
      try {
        for (let next = await first; !next.done; next = await items.next()) {
          const item = next.value;
          await stream.writeSSE({ event: item.topic, data: JSON.stringify(item.data), ...(item.offset >= 0 ? { id: String(item.offset) } : {}) });
        }
        if (!abort.signal.aborted) await stream.writeSSE({ event: 'end', data: JSON.stringify({ id }) });
      } finally {
        clearInterval(ping);
        abort.abort();
        await items.return(undefined);
      }
    });
  });

  app.post('/api/sessions/:id/ag-ui', async (c) => {
    const id = parseWith(workflowIdSchema, c.req.param('id'), 'path', 'id');
    const body = await readJson(c);
    return agUiRun(c, options.keel, id, body, c.get('holder').name);
  });

  // One endpoint for an AG-UI client (CopilotKit) with many threads: each thread is a session of
  // its own, `agui-<threadId>`, started on its first run in the server's workspace. Through
  // /api/sessions/{id}/ag-ui every thread of the app landed in that one session.
  app.post('/api/ag-ui', async (c) => {
    const body = await readJson(c);
    const threadId = parseWith(agUiThreadIdSchema, (body as { threadId?: unknown } | null | undefined)?.threadId, 'body', 'threadId');
    const id = `agui-${threadId}`;
    // A new thread may branch from another's message (server/ag-ui-fork.ts); else its session starts empty.
    const forkOf = forkOfRun(body);
    await options.keel.client.connection.withDeadline(Date.now() + REQUEST_DEADLINE_MS, async () => (forkOf !== null && (await forkThread(options.keel, id, forkOf))) || options.keel.startSession({ id, workspace: options.workspace }));
    return agUiRun(c, options.keel, id, body, c.get('holder').name);
  });

  // A known path with a method it does not have: 405 with Allow.
  const methods = new Map<string, Set<string>>();
  for (const r of routes) (methods.get(r.path) ?? methods.set(r.path, new Set()).get(r.path)!).add(r.method.toUpperCase());
  methods.set('/api/workflows/{id}/events', new Set(['GET']));
  methods.set('/api/sessions/{id}/ag-ui', new Set(['POST']));
  methods.set('/api/ag-ui', new Set(['POST']));
  for (const [p, allowed] of methods) {
    app.all(p.replace(/\{(\w+)\}/g, ':$1'), (c) => {
      const allow = [...allowed, ...(allowed.has('GET') ? ['HEAD'] : [])].join(', ');
      const res = problem(c.req.path, new ProblemError(405, 'method-not-allowed', `${c.req.method} is not allowed here; use ${allow}`));
      res.headers.set('Allow', allow);
      return res;
    });
  }

  app.notFound((c) => problem(c.req.path, new ProblemError(404, 'not-found', `no route ${c.req.method} ${c.req.path}`)));
  app.onError((error, c) => problem(c.req.path, toProblem(error)));
  return app;
}

/** A request's digest: its route and its body as parsed, keys sorted, so spacing and key order do not count. */
export function digestOf(route: string, body: unknown): string {
  const canonical = (v: unknown): unknown =>
    Array.isArray(v) ? v.map(canonical) : v !== null && typeof v === 'object' ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, x]) => [k, canonical(x)])) : v;
  return createHash('sha256').update(JSON.stringify([route, canonical(body ?? null)])).digest('hex');
}

function problem(instance: string, p: ProblemError): Response {
  const headers: Record<string, string> = { 'Content-Type': 'application/problem+json' };
  if (p.status === 401) headers['WWW-Authenticate'] = 'Bearer realm="keel"';
  return new Response(JSON.stringify(p.toProblem(instance)), { status: p.status, headers });
}

export function toProblem(error: unknown): ProblemError {
  if (error instanceof ProblemError) return error;
  if (error instanceof UpdateRejectedError) return new ProblemError(409, 'rejected', error.message, { reason: error.reason, ...(error.code !== undefined ? { code: error.code } : {}) });
  if (error instanceof NotFoundError) return new ProblemError(404, 'not-found', error.message);
  // No such turn, or a session without checkpoints: refused with its code, as a workflow's refusal is.
  if (error instanceof CheckpointError) return new ProblemError(409, 'rejected', error.message, { code: error.code });
  // Start options the workflow would refuse (the model table's, the schema's): each problem
  // names its option, as a pointer into the body. It was a 500.
  if (error instanceof InvalidInputError) {
    const errors = error.problems.map((p) => ({ pointer: `/body/${p.slice(0, Math.max(0, p.indexOf(':'))).split('.')[0] || 'options'}`, message: p }));
    return new ProblemError(400, 'validation', error.problems.join('; '), { errors });
  }
  if (error instanceof IdempotencyKeyReusedError) return new ProblemError(422, 'idempotency-key-reused', error.message);
  if (error instanceof ConnectionError) return new ProblemError(503, 'unavailable', error.message);
  if (error instanceof NoAnswerError) return new ProblemError(504, 'timeout', error.message);
  const grpc = grpcCause(error);
  if (grpc !== null) {
    // 3 INVALID_ARGUMENT, 5 NOT_FOUND, 14 UNAVAILABLE, 4 DEADLINE_EXCEEDED
    const code = Number(grpc.code);
    if (code === 3) return new ProblemError(400, 'validation', grpc.details || 'invalid argument');
    if (code === 5) return new ProblemError(404, 'not-found', grpc.details || 'not found');
    if (code === 9) return new ProblemError(409, 'rejected', 'the workflow has not run yet: is a Keel worker running on its task queue?', { reason: grpc.details || 'failed precondition' });
    if (code === 4) return new ProblemError(504, 'timeout', 'the workflow did not answer in time: is a Keel worker running on its task queue?');
    if (code === 14) return new ProblemError(503, 'unavailable', grpc.details || 'Temporal unavailable');
    // 8 RESOURCE_EXHAUSTED: Temporal sheds load (a busy dev server refuses queries); try again later.
    if (code === 8) return new ProblemError(503, 'unavailable', grpc.details || 'Temporal is busy: try again');
  }
  // The gRPC status, when there is one, is what tells the operator which case this was.
  const status = grpc !== null ? ` (gRPC ${String(grpc.code)}: ${grpc.details})` : '';
  console.error(`keel serve: unexpected error: ${error instanceof Error ? error.message : String(error)}${status}`);
  return new ProblemError(500, 'internal', 'unexpected error (see the server log)');
}

/** The gRPC error under an error, however deeply the SDK wrapped it (an update's deadline comes as WorkflowUpdateRPCTimeoutOrCancelledError). */
function grpcCause(error: unknown): { code: unknown; details: string } | null {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 6; e = (e as { cause?: unknown }).cause, depth++) {
    if (isGrpcServiceError(e)) return e;
  }
  return null;
}

export function parseWith<S extends z.ZodType>(schema: S, value: unknown, where: 'body' | 'query' | 'path' | 'header', name?: string): z.output<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  if (name) {
    const errors = r.error.issues.map((i) => ({ pointer: `/${where}/${name}`, message: i.message }));
    throw new ProblemError(400, 'validation', errors.map((e) => `${e.pointer}: ${e.message}`).join('; '), { errors });
  }
  throw validationProblem(r.error, where);
}

function parseQuery(schema: z.ZodType, c: Context): unknown {
  const raw: Record<string, string> = {};
  const url = new URL(c.req.url);
  for (const [k, v] of url.searchParams) raw[k] = v;
  return parseWith(schema, raw, 'query');
}

/** The JSON body (undefined when empty). Only JSON is accepted: a form post from another site cannot be one. */
export async function readJson(c: Context): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === '') return undefined;
  const type = c.req.header('content-type') ?? '';
  if (!/^application\/([\w.+-]+\+)?json\b/i.test(type)) throw new ProblemError(415, 'unsupported-media-type', 'send Content-Type: application/json');
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new ProblemError(400, 'validation', `the body is not JSON: ${error instanceof Error ? error.message : String(error)}`, { errors: [{ pointer: '/body', message: 'not JSON' }] });
  }
}

function startOffset(c: Context): number {
  const last = c.req.header('last-event-id');
  const from = new URL(c.req.url).searchParams.get('from');
  const parse = (v: string, name: string) => {
    if (!/^[0-9]{1,15}$/.test(v)) throw new ProblemError(400, 'validation', `${name} must be a stream offset`, { errors: [{ pointer: `/${name === 'from' ? 'query' : 'header'}/${name}`, message: 'not an offset' }] });
    return Number(v);
  };
  // Both are checked when both are sent; Last-Event-ID (a reconnecting client) wins.
  const fromQuery = from === null ? null : parse(from, 'from');
  if (last !== undefined) return parse(last, 'Last-Event-ID') + 1;
  if (fromQuery !== null) return fromQuery;
  return 0;
}

export type { Route };
