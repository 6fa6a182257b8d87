// The server's edges that need no Temporal: the document refuses what the server refuses
// (whitespace-only text), agent ids with `/` reach the routes, the CORS allow-list, the
// one-time login link, and the console bundle.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { KeelClient } from '../../client/keel-client';
import { createApp } from '../../server/app';
import { authenticate, loadTokens } from '../../server/auth';
import { CONSOLE_SCRIPT_FILE, consoleScript } from '../../server/console-bundle';
import { LoginCodes } from '../../server/login';
import { corsOriginsOf } from '../../server/main';
import { openApiDocument } from '../../server/openapi';
import { routes } from '../../server/routes';

const TOKEN = 'keel_unit_token_0123456789abcdef';
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** Only what these requests reach: the deadline wrapper and kindOf (an agent). */
const keel = { client: { connection: { withDeadline: (_: number, fn: () => unknown) => fn() } }, kindOf: async () => 'agent' } as unknown as KeelClient;
const app = (extra: Partial<Parameters<typeof createApp>[0]> = {}) => createApp({ keel, tokens: loadTokens({ KEEL_API_TOKEN: TOKEN }).tokens, workspace: os.tmpdir(), ...extra });
const auth = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' };

type Schema = { anyOf?: Schema[]; pattern?: string; properties?: Record<string, Schema> };
const bodySchema = (p: string) => (openApiDocument(routes, '1') as { paths: Record<string, { post: { requestBody: { content: { 'application/json': { schema: Schema } } } } }> }).paths[p]!.post.requestBody.content['application/json'].schema;

describe('text bodies: the document and the server agree', () => {
  it('whitespace-only text fails the documented pattern and the server, with the field named', async () => {
    for (const [p, field] of [['/api/sessions/{id}/messages', 'text'], ['/api/sessions/{id}/steer', 'text'], ['/api/goals/{id}/plan/reject', 'feedback']] as const) {
      const s = bodySchema(p);
      const patterns = [s.anyOf![0]!.pattern, s.anyOf![1]!.properties![field]!.pattern];
      for (const pattern of patterns) {
        expect(new RegExp(pattern!, 'u').test('  \t\n ')).toBe(false);
        expect(new RegExp(pattern!, 'u').test(' hi ')).toBe(true);
      }
    }
    expect(new RegExp((bodySchema('/api/goals') as { properties: Record<string, Schema> }).properties.goal!.pattern!, 'u').test('   ')).toBe(false);
    for (const body of ['"   "', '{"text":" \\n "}']) {
      const res = await app().request('/api/sessions/s1/messages', { method: 'POST', headers: auth, body });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { detail: string }).detail).toMatch(/blank/);
    }
  });
});

describe('agent ids', () => {
  it('an id with / (a task agent) is taken by the routes and answered as an agent, not refused as malformed', async () => {
    const res = await app().request(`/api/goals/${encodeURIComponent('goal-1/task-code/1')}`, { headers: auth });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { detail: string }).detail).toBe('goal-1/task-code/1 is an agent (answer it on its goal)');
  });
});

describe('CORS', () => {
  it('answers preflights from listed origins only, before the token check, never with credentials', async () => {
    const a = app({ corsOrigins: ['https://app.example.com'] });
    const pre = (origin: string) =>
      a.request('/api/sessions/s1/ag-ui', { method: 'OPTIONS', headers: { Origin: origin, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'authorization,content-type' } });
    const ok = await pre('https://app.example.com');
    expect(ok.status).toBe(204);
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    expect(ok.headers.get('access-control-allow-headers')).toMatch(/Authorization/);
    expect(ok.headers.get('access-control-allow-credentials')).toBeNull();
    const other = await pre('https://evil.example.com');
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    // Without a list, no CORS headers at all.
    expect((await app().request('/api/inbox', { headers: { Origin: 'https://app.example.com' } })).headers.get('access-control-allow-origin')).toBeNull();
    expect(corsOriginsOf({ KEEL_CORS_ORIGINS: 'https://a.example, http://localhost:3000' })).toEqual(['https://a.example', 'http://localhost:3000']);
    expect(() => corsOriginsOf({ KEEL_CORS_ORIGINS: 'https://a.example/path' })).toThrow(/not an origin/);
  });
});

describe('login link', () => {
  it('a code works once, for 15 minutes, for a new token of the first holder kept (by hash) in the token file', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-login-'));
    dirs.push(dir);
    const setup = loadTokens({ KEEL_CONFIG_DIR: dir });
    let now = 1_000_000;
    const codes = new LoginCodes(setup, () => now);
    const code = codes.issue();
    const a = createApp({ keel, tokens: setup.tokens, workspace: dir, login: codes });
    const res = await a.request('/login', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ code }) });
    expect(res.status).toBe(200);
    const { token, name } = (await res.json()) as { token: string; name: string };
    expect(name).toBe(setup.tokens[0]!.name);
    expect(authenticate(setup.tokens, `Bearer ${token}`)?.name).toBe(name);
    // Kept for the next start, by its hash only.
    const file = fs.readFileSync(setup.file, 'utf8');
    expect(file).not.toContain(token);
    expect(authenticate(loadTokens({ KEEL_CONFIG_DIR: dir }).tokens, `Bearer ${token}`)?.name).toBe(name);
    // Once only; an old code no more.
    expect((await a.request('/login', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ code }) })).status).toBe(401);
    const late = codes.issue();
    now += 15 * 60_000 + 1;
    expect(codes.redeem(late)).toBeNull();
    expect(codes.redeem('not a code')).toBeNull();
  });
});

describe('console bundle', () => {
  it('is built from the TypeScript sources and served as the console script', async () => {
    const script = consoleScript();
    expect(script.length).toBeGreaterThan(10_000);
    expect(script).not.toMatch(/^import /m);
    const res = await app().request('/console/app.js');
    expect(res.headers.get('content-type')).toMatch(/javascript/);
    expect(await res.text()).toBe(script);
  });

  it('is served from the built file, which is no older than any of its sources (built on demand in a checkout)', () => {
    consoleScript();
    expect(fs.readFileSync(CONSOLE_SCRIPT_FILE, 'utf8')).toBe(consoleScript());
    const sources = path.join(path.dirname(CONSOLE_SCRIPT_FILE), '../../server/console/src');
    const files = fs.readdirSync(sources, { recursive: true, encoding: 'utf8' }).filter((f) => /\.tsx?$/.test(f));
    expect(files.length).toBeGreaterThan(5);
    const built = fs.statSync(CONSOLE_SCRIPT_FILE).mtimeMs;
    for (const f of files) expect(fs.statSync(path.join(sources, f)).mtimeMs, f).toBeLessThanOrEqual(built);
  });
});

describe('request size', () => {
  it('every route that reads a body refuses one over the limit with a 413, before reading it whole', async () => {
    const { MAX_BODY_BYTES } = await import('../../server/app');
    const big = JSON.stringify({ text: 'x'.repeat(MAX_BODY_BYTES + 1) });
    const bodyRoutes = [...routes.filter((r) => r.body).map((r) => r.path.replace('{id}', 'session-x')), '/api/sessions/session-x/ag-ui', '/login'];
    for (const p of bodyRoutes) {
      const res = await app().request(p, { method: 'POST', headers: auth, body: big });
      expect([p, res.status]).toEqual([p, 413]);
    }
    // Streamed without a length, the limit holds as it arrives.
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 5; i += 1) controller.enqueue(new Uint8Array(MAX_BODY_BYTES / 2));
        controller.close();
      },
    });
    const res = await app().request('/api/sessions/session-x/messages', { method: 'POST', headers: auth, body: stream, duplex: 'half' });
    expect(res.status).toBe(413);
  });

  it('the OpenAPI document lists that 413 for every operation with a body (schemathesis found it undocumented)', async () => {
    const doc = (await (await app().request('/openapi.json', { headers: auth })).json()) as { paths: Record<string, Record<string, { requestBody?: unknown; responses: Record<string, unknown> }>> };
    const withBody = Object.entries(doc.paths).flatMap(([p, ops]) => Object.entries(ops).filter(([, op]) => op.requestBody !== undefined).map(([method, op]) => [`${method} ${p}`, op.responses['413'] !== undefined] as const));
    expect(withBody.length).toBeGreaterThan(10);
    expect(withBody.filter(([, documented]) => !documented).map(([name]) => name)).toEqual([]);
  });
});
