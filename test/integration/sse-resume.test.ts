// The event stream resumed across the end of a workflow: every item carries its stream
// offset (the SSE id), and a reader that reconnects with Last-Event-ID before, during or
// after the close gets exactly what it had not seen, with no loss and no repeats. Before
// the stream query (workflows/stream-read.ts) a reconnect after the end got none of it.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { KeelClient } from '../../client/keel-client';
import { startServer } from '../../server/main';
import { loadScenario } from '../../standin/scenario';
import type { ModelStreamEvent } from '../../shared/model-stream';
import type { LogEntry } from '../../workflows/definitions';
import { authed, readSse, TEST_TOKEN } from '../fixtures/serve-process';
import { sessionEnv, waitUntil } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const { env, workflowBundle } = useTemporal();

type SseItem = { event: string; id: string | null; data: unknown };
const kind = (e: SseItem) => (e.event === 'events' ? (e.data as LogEntry).kind : null);
const withoutEnd = (xs: SseItem[]) => xs.filter((e) => e.event !== 'end');
const durable = (xs: SseItem[]) => xs.filter((e) => e.id !== null);
const modelText = (xs: SseItem[]) =>
  xs
    .filter((e) => e.event === 'model')
    .map((e) => e.data as ModelStreamEvent)
    .map((m) => (m.kind === 'delta' && m.block === 'text' ? m.text : ''))
    .join('');

describe('SSE resume across the end of a workflow', () => {
  it('reconnecting with Last-Event-ID before, during and after the close gets every later item once, each with its offset', async () => {
    // The demo's scenario, its story streamed 10× faster: the same ~29 chunks (as many items
    // for the reader open across the close), without 200 ms between each (5.8 s of waiting).
    const demo = await loadScenario(path.join(root, 'test/fixtures/scenarios/session-demo.yaml'));
    const story = demo.rules.filter((r) => r.reply?.delayMs === 200);
    expect(story).toHaveLength(1);
    story[0]!.reply!.delayMs = 20;
    const s = await sessionEnv(env, workflowBundle, demo, { ANTHROPIC_API_KEY: 'sk-ant-demo' }, { ownWorkflowThread: true });
    const keel = await KeelClient.connect({ client: env.client, taskQueue: s.taskQueue });
    const server = await startServer({ keel, port: 0, workspace: s.workspace, env: { KEEL_API_TOKEN: TEST_TOKEN } });
    let id = '';
    try {
      await s.run(async () => {
        const api = authed(server.url);
        const session = await keel.startSession({ workspace: s.workspace, policy: { mode: 'full-auto' } });
        id = session.id;
        const events = (headers: Record<string, string> = {}) => api(`/api/workflows/${id}/events`, { headers: { Accept: 'text/event-stream', ...headers } });

        // Before the close: a reader sees the first items of a turn, then drops.
        await session.post('please list the files');
        const early = await readSse(await events(), (e) => kind(e) === 'tool.call');
        const earlyLast = early.at(-1)!.id!;
        // During: it comes back while the session still runs and reads up to the turn's end.
        const during = await readSse(await events({ 'Last-Event-ID': earlyLast }), (e) => kind(e) === 'session.turn_finished');
        expect(during[0]!.id).toBe(String(Number(earlyLast) + 1));
        const duringLast = during.at(-1)!.id!;

        // A reader open across the close: it follows from the turn's end to the stream's end.
        const across = readSse(await events({ 'Last-Event-ID': duringLast }), (e) => e.event === 'end');
        await session.post('tell me a story');
        await readSse(await events({ 'Last-Event-ID': duringLast }), (e) => kind(e) === 'session.turn_finished');
        await api(`/api/sessions/${id}/close`, { json: { reason: 'test over' } });
        await waitUntil(async () => (await env.client.workflow.getHandle(id).describe()).status.name, (st) => st === 'COMPLETED', 30_000, 'session closed');
        const acrossItems = await across;
        expect(acrossItems.at(-1)!.event).toBe('end');

        // After the close: the whole stream from the start, every item with its offset.
        const all = withoutEnd(await readSse(await events(), (e) => e.event === 'end'));
        expect(all.map((e) => e.id)).toEqual(all.map((_, i) => String(i)));
        expect(all.some((e) => e.event === 'model')).toBe(true);
        expect(all.map(kind)).toContain('session.closed');
        const after = (id: string | number) => all.slice(Number(id) + 1);

        // What each reader got joins up to the whole stream, without loss or repeats: every item
        // of the stream once, by its offset, and the same model text. Readers open while the
        // model streamed also got its text live from the server (no id: client/live-model.ts),
        // and the stream's copy of those characters came emptied.
        const joined = [...early, ...during, ...withoutEnd(acrossItems)];
        expect(durable(joined).map((e) => e.id)).toEqual(all.map((e) => e.id));
        expect(durable(joined).filter((e) => e.event === 'events')).toEqual(all.filter((e) => e.event === 'events'));
        expect(modelText(joined)).toBe(modelText(all));
        expect(durable(withoutEnd(acrossItems)).map((e) => e.id)).toEqual(after(duringLast).map((e) => e.id));
        expect(modelText(withoutEnd(acrossItems))).toBe(modelText(after(duringLast)));

        // Reconnects after the close from several points, including the Last-Event-ID: 10,
        // the last item (nothing follows but the end) and a `from` query.
        for (const cut of [0, 10, Math.floor(all.length / 2), all.length - 2, all.length - 1]) {
          const resumed = await readSse(await events({ 'Last-Event-ID': String(cut) }), (e) => e.event === 'end');
          expect(resumed.at(-1)!.event).toBe('end');
          expect(withoutEnd(resumed)).toEqual(after(cut));
        }
        const fromQuery = await readSse(await api(`/api/workflows/${id}/events?from=11`), (e) => e.event === 'end');
        expect(withoutEnd(fromQuery)).toEqual(after(10));
      });
    } finally {
      await server.close();
      if (id) await env.client.workflow.getHandle(id).terminate('test over').catch(() => undefined);
    }
  }, 120_000);
});
