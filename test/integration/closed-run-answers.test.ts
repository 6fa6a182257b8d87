// Reads of a closed session (client/closed-run-answers.ts): many at once are all answered,
// each replayed once, and kept; an open session's reads still follow its changes.
import { describe, expect, it } from 'vitest';
import { KeelClient } from '../../client/keel-client';
import { say, sessionEnv, waitUntil } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();

describe('reads of a closed session', () => {
  it('answers twenty reads at once, replaying each distinct one once, and answers them again after the worker is gone', async () => {
    const s = await sessionEnv(env, workflowBundle, { name: 'closed', rules: [{ match: {}, reply: say('Hello.') }] });
    const keel = await KeelClient.connect({ client: env.client, taskQueue: s.taskQueue });
    let id = '';
    let answers: unknown[] = [];
    await s.run(async () => {
      const session = await keel.startSession({ workspace: s.workspace, policy: { mode: 'full-auto' } });
      id = session.id;
      // Open: each read sees the session as it is now.
      const before = await session.state();
      await session.send('hi');
      const after = await session.state();
      expect(after.nextEventSeq).toBeGreaterThan(before.nextEventSeq);

      await session.close('done');
      await waitUntil(async () => (await env.client.workflow.getHandle(id).describe()).status.name, (st) => st === 'COMPLETED', 30_000, 'session closed');
      // Closed: what the console's tabs and the API ask at once. Before, the core answered one
      // query per eviction and dropped the others, which waited out their deadline.
      const started = Date.now();
      const reads = Array.from({ length: 5 }, () => [session.state(), session.transcript(), session.pendingApprovals(), session.usage()]).flat();
      answers = await Promise.all(reads);
      // Seconds on a busy machine; a dropped query waited out its deadline and failed (then Promise.all did too).
      expect(Date.now() - started).toBeLessThan(30_000);
      for (let i = 4; i < answers.length; i++) expect(answers[i]).toEqual(answers[i % 4]);
      expect((answers[0] as { nextEventSeq: number }).nextEventSeq).toBeGreaterThan(after.nextEventSeq);
    });
    // The worker has stopped: nothing could replay the run, and the kept answers still come back.
    const session = keel.getSession(id);
    const again = await Promise.all([session.state(), session.transcript(), session.pendingApprovals(), session.usage()]);
    expect(again).toEqual(answers.slice(0, 4));
  }, 120_000);
});
