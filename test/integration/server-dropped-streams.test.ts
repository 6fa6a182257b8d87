// The 504 "No worker answered in time" under load: a stream reader that goes away (a closed
// tab, a proxy timeout, schemathesis giving up, an AG-UI run that ended) must not leave work
// parked in the workflow. Temporal admits at most 10 updates in flight per workflow; a stream
// poll parked in a quiet session counted as one until the next event, so ten dropped readers
// made every later update (a message, an approval) wait out the API's 15 s bound and answer
// 504. Here twelve readers of a quiet session drop their streams, then a message goes through
// at once.
import { describe, expect, it } from 'vitest';
import { KeelClient } from '../../client/keel-client';
import { startServer } from '../../server/main';
import { TEST_TOKEN } from '../fixtures/serve-process';
import { KEY, sessionEnv } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();

const auth = { Authorization: `Bearer ${TEST_TOKEN}` };

/** Opens the stream, reads its first bytes, and goes away. */
async function openAndDrop(url: string): Promise<number> {
  const controller = new AbortController();
  const res = await fetch(url, { headers: auth, signal: controller.signal });
  const reader = res.body!.getReader();
  await Promise.race([reader.read(), new Promise((r) => setTimeout(r, 300))]);
  controller.abort();
  await reader.cancel().catch(() => undefined);
  return res.status;
}

describe('dropped stream readers', () => {
  it('twelve readers of a quiet session go away, and the next message is taken at once (no 504)', async () => {
    const s = await sessionEnv(env, workflowBundle, { name: 'ok', apiKeys: [KEY], rules: [{ name: 'ok', match: {}, reply: { content: [{ type: 'text', text: 'ok' }] } }] }, {}, { ownWorkflowThread: true });
    const keel = await KeelClient.connect({ client: env.client, taskQueue: s.taskQueue });
    const server = await startServer({ keel, port: 0, workspace: s.workspace, env: { KEEL_API_TOKEN: TEST_TOKEN, KEEL_API_APPROVER: 'dropped' } });
    let id = '';
    try {
      await s.run(async () => {
        const session = await keel.startSession({ workspace: s.workspace });
        id = session.id;
        await session.send('hello');
        const next = (await session.state()).nextEventSeq;
        const offset = await session.streamOffset();
        expect(next).toBeGreaterThan(0);
        // Each reader waits for what comes after now: nothing comes while they are there.
        for (let i = 0; i < 12; i++) expect(await openAndDrop(`${server.url}/api/workflows/${id}/events?from=${offset}`)).toBe(200);
        // An AG-UI run that ended leaves nothing behind either.
        for (let i = 0; i < 3; i++) {
          const run = await fetch(`${server.url}/api/sessions/${id}/ag-ui`, {
            method: 'POST',
            headers: { ...auth, 'Content-Type': 'application/json' },
            body: JSON.stringify({ threadId: id, runId: `r${i}`, messages: [{ id: `u${i}`, role: 'user', content: `hi ${i}` }], tools: [], context: [], state: {}, forwardedProps: {} }),
          });
          expect(await run.text()).toContain('RUN_FINISHED');
        }
        // Parked updates made it wait out the API's 15 s bound and answer 504: the status says
        // which, where a bound on its time said it only on an idle machine.
        const res = await fetch(`${server.url}/api/sessions/${id}/messages`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body: JSON.stringify({ text: 'are you there?' }) });
        expect(res.status, await res.clone().text()).toBe(200);
        const approve = await fetch(`${server.url}/api/workflows/${id}/approve`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body: JSON.stringify({ callId: 'none' }) });
        expect(approve.status).toBe(409);
      });
    } finally {
      await server.close();
      if (id) await env.client.workflow.getHandle(id).terminate('test over').catch(() => undefined);
    }
  }, 120_000);
});
