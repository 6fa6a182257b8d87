// The HTTP API of `keel serve` as a real child process against the real dev server and a
// real worker: bearer token, problem details, Idempotency-Key, the inbox (plan, tool calls
// with a diff), the SSE stream resumed with Last-Event-ID, and an approval that arrives on
// a fresh request after the API process was killed and started again.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadScenario } from '../../standin/scenario';
import type { GoalLogEntry } from '../../workflows/definitions';
import type { InboxItem } from '../../server/schemas';
import { goalEnv, waitUntil } from '../fixtures/goal-harness';
import { authed, readSse, startServe, TEST_TOKEN } from '../fixtures/serve-process';
import { useTemporal } from '../fixtures/use-temporal';

const here = path.dirname(fileURLToPath(import.meta.url));
const demoScenario = path.join(here, '../../client/demo/goal-demo.yaml');

const { env, workflowBundle } = useTemporal();

type Problem = { type: string; title: string; status: number; detail: string; errors?: { pointer: string; message: string }[]; reason?: string };

describe('keel serve: HTTP API', () => {
  it('drives a goal over HTTP; an approval on a fresh request after the API restarted reaches the agent', async () => {
    const g = await goalEnv(env, workflowBundle, await loadScenario(demoScenario), 'sk-ant-demo', { ownWorkflowThread: true });
    let server = await startServe({ taskQueue: g.taskQueue, workspace: g.workspace });
    const started: string[] = [];
    try {
      await g.run(async () => {
        expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
        let api = authed(server.url);

        // No token, a wrong token: refused with a problem document, and nothing else leaks.
        const none = await fetch(`${server.url}/api/inbox`);
        expect(none.status).toBe(401);
        expect(none.headers.get('content-type')).toBe('application/problem+json');
        expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
        expect(none.headers.get('set-cookie')).toBeNull();
        expect(((await none.json()) as Problem).type).toMatch(/unauthorized$/);
        expect((await authed(server.url, 'keel_wrong_token_0000000000000000')('/api/inbox')).status).toBe(401);
        // The OpenAPI document is public and lists the routes.
        const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as { openapi: string; paths: Record<string, unknown> };
        expect(doc.openapi).toBe('3.1.0');
        expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/api/inbox', '/api/goals', '/api/workflows/{id}/approve', '/api/workflows/{id}/events']));

        // Validation names the field.
        const bad = await api('/api/goals', { json: { goal: '', mode: 'yolo' } });
        expect(bad.status).toBe(400);
        const badBody = (await bad.json()) as Problem;
        expect(badBody.errors?.map((e) => e.pointer).sort()).toEqual(['/body/goal', '/body/mode']);

        // Idempotency-Key: the same key twice is the same goal.
        const key = `api-${g.taskQueue.slice(-8)}`;
        const first = await api('/api/goals', { json: { goal: 'A slugify module with passing tests and a README' }, headers: { 'Idempotency-Key': key } });
        expect(first.status).toBe(201);
        const { id } = (await first.json()) as { id: string };
        started.push(id);
        expect(id).toBe(`goal-${key}`);
        expect(first.headers.get('location')).toBe(`/api/goals/${id}`);
        const second = await api('/api/goals', { json: { goal: 'A slugify module with passing tests and a README' }, headers: { 'Idempotency-Key': key } });
        expect(((await second.json()) as { id: string }).id).toBe(id);
        // The same key with another body is another request: refused, not the first one's goal.
        const reused = await api('/api/goals', { json: { goal: 'Something else entirely' }, headers: { 'Idempotency-Key': key } });
        expect(reused.status).toBe(422);
        expect(((await reused.json()) as Problem).type).toBe('https://keel.dev/problems/idempotency-key-reused');
        // Key order and spacing are not another request.
        const reordered = await api('/api/goals', { method: 'POST', body: '{ "goal" : "A slugify module with passing tests and a README" }', headers: { 'Idempotency-Key': key, 'Content-Type': 'application/json' } });
        expect(reordered.status).toBe(201);
        const runs = await env.client.workflow.count(`WorkflowId = '${id}'`);
        expect(runs.count).toBe(1);

        // The plan shows up in the inbox (the same "waiting for a human" query as tool calls).
        const inbox = async () => ((await (await api('/api/inbox')).json()) as { items: InboxItem[] }).items.filter((i) => i.workflowId === id);
        const planned = await waitUntil(inbox, (items) => items.some((i) => i.type === 'plan'), 30_000, 'plan in the inbox');
        const planItem = planned.find((i) => i.type === 'plan')!;
        expect(planItem.type === 'plan' && planItem.tasks.map((t) => t.id)).toEqual(['code', 'tests', 'docs']);
        const waitingList = (await (await api('/api/workflows?waiting=true')).json()) as { items: { id: string }[] };
        expect(waitingList.items.map((i) => i.id)).toContain(id);

        // A refusal carries the machine's reason; an unknown id is a 404.
        const early = await api(`/api/workflows/${id}/approve`, { json: { callId: 'toolu_nope' } });
        expect(early.status).toBe(409);
        expect(((await early.json()) as Problem).reason).toMatch(/unknown call id toolu_nope/);
        expect((await api('/api/goals/no-such-goal')).status).toBe(404);

        expect((await api(`/api/goals/${id}/plan/approve`, { method: 'POST' })).status).toBe(200);

        // Follow the stream until the first tool call waits; remember the last offset.
        const stream = await api(`/api/workflows/${id}/events`, { headers: { Accept: 'text/event-stream' } });
        expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
        const seen = await readSse(stream, (e) => e.event === 'events' && (e.data as GoalLogEntry).kind === 'agent.approval_requested');
        const asked = seen.at(-1)!.data as Extract<GoalLogEntry, { kind: 'agent.approval_requested' }>;
        const lastId = seen.at(-1)!.id!;
        expect(seen.map((e) => Number(e.id))).toEqual(seen.map((_, i) => i));

        // The tool call in the inbox: its exact arguments and, for a write, the diff.
        const items = await waitUntil(inbox, (xs) => xs.some((i) => i.type === 'tool_call' && i.callId === asked.callId), 30_000, 'tool call in the inbox');
        const call = items.find((i) => i.type === 'tool_call' && i.callId === asked.callId)!;
        expect(call.type === 'tool_call' && call.toolName).toBe('write_file');
        expect(call.type === 'tool_call' && call.input).toEqual(asked.input);
        expect(call.type === 'tool_call' && call.diff).toMatch(/^\+\+\+ b\/slugify\.mjs$/m);
        expect(call.type === 'tool_call' && call.diff).toMatch(/^\+export function slugify\(text\) \{$/m);

        // The Web UI's view of the same goal: its details are Markdown with the names in
        // code spans (unescaped, write_file's underscores and node --test's dashes were mangled).
        const meta = await env.client.workflow.getHandle(id).query<{ currentDetails: string }>('__temporal_workflow_metadata');
        expect(meta.currentDetails).toContain(`waiting for approval: \`write_file\` (\`${asked.callId}\`, task \`code\`)`);
        const described = await env.client.workflow.getHandle(id).describe();
        expect(await described.staticSummary()).toBe('goal: A slugify module with passing tests and a README');
        expect(await described.staticDetails()).toMatch(/^Keel goal in `.+`\n\nA slugify module with passing tests and a README$/);

        // The API process dies and comes back; the approval arrives on a fresh request.
        await server.stop();
        server = await startServe({ taskQueue: g.taskQueue, workspace: g.workspace });
        api = authed(server.url);
        const approved = await api(`/api/workflows/${id}/approve`, { json: { callId: asked.callId } });
        expect(approved.status).toBe(200);
        expect(((await approved.json()) as { callId: string }).callId).toBe(asked.callId);
        // The approver is the token holder's name: the agent got it with the approval.
        const approvals = await waitUntil(
          async () => {
            const history = await env.client.workflow.getHandle(asked.agentId).fetchHistory();
            return (history.events ?? []).flatMap((e) => {
              const a = e.workflowExecutionSignaledEventAttributes;
              if (a?.signalName !== 'approve') return [];
              return [JSON.parse(Buffer.from(a.input!.payloads![0]!.data!).toString('utf8')) as { callId: string; approver?: string }];
            });
          },
          (xs) => xs.length > 0,
          30_000,
          'approve signal on the agent',
        );
        // The token's name, proven by the API's signature (shared/approver-proof.ts), not claimed.
        expect(approvals).toEqual([{ callId: asked.callId, approver: 'Ada Lovelace (API token)', proven: true }]);

        // Resume the stream where it stopped (Last-Event-ID), answering every other call.
        const rest = await api(`/api/workflows/${id}/events`, { headers: { 'Last-Event-ID': lastId } });
        const tail = await readSse(rest, (e) => {
          if (e.event === 'events' && (e.data as GoalLogEntry).kind === 'agent.approval_requested') {
            const c = e.data as Extract<GoalLogEntry, { kind: 'agent.approval_requested' }>;
            void api(`/api/workflows/${id}/approve`, { json: { callId: c.callId } });
          }
          return e.event === 'end' || (e.event === 'events' && (e.data as GoalLogEntry).kind === 'plan.goal_met');
        });
        expect(tail[0]!.id).toBe(String(Number(lastId) + 1));
        expect(tail.some((e) => e.event === 'events' && (e.data as GoalLogEntry).kind === 'plan.goal_met')).toBe(true);
        // A goal that just finished answers from a replay on the worker: on a loaded machine that
        // can outlast the API's 15 s deadline (a 504 problem, the documented answer), so ask again.
        const final = await waitUntil(
          async () => {
            const res = await api(`/api/goals/${id}`);
            return { status: res.status, body: (await res.json()) as { state?: { status: string } } & Partial<Problem> };
          },
          (r) => r.status !== 504,
          60_000,
          'the finished goal answering GET /api/goals/{id}',
        );
        expect(final, JSON.stringify(final.body)).toMatchObject({ status: 200, body: { state: { status: 'goal_met' } } });

        // A task agent's own stream (its id has slashes, sent as %2F): its tool calls and their
        // results, to its end. The console's agent page reads it; the route answered 404.
        const agentStream = await api(`/api/workflows/${encodeURIComponent(asked.agentId)}/events`, { headers: { Accept: 'text/event-stream' } });
        expect(agentStream.status).toBe(200);
        const agentItems = await readSse(agentStream, (e) => e.event === 'end');
        const agentKinds = agentItems.filter((e) => e.event === 'events').map((e) => (e.data as { kind: string }).kind);
        expect(agentKinds, agentKinds.join(', ')).toEqual(expect.arrayContaining(['tool.approval_requested', 'tool.result']));
        expect(agentItems.filter((e) => e.event === 'events').some((e) => JSON.stringify(e.data).includes(asked.callId))).toBe(true);
        expect(agentItems.at(-1)!.event).toBe('end');
        expect(server.output).not.toContain(TEST_TOKEN);
      });
    } finally {
      await server.stop();
      await Promise.allSettled(started.map((id) => env.client.workflow.getHandle(id).terminate('test over')));
    }
  });
});
