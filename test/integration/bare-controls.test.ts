// Controls that name nothing (`resume`, `stop`, `reset`, `restart`, a goal's `approvePlan`)
// had no payload for encryption to authenticate: anyone who reached Temporal could resume a
// paused session or approve a plan, keys or not. Keel's clients now send them with an
// (encrypted) `{}`, and a workflow started by a client holding the keys refuses the bare
// form — plaintext `{}` is refused as every plaintext payload is. Real worker with keys,
// dev server, stand-in.
import { Client, WorkflowUpdateFailedError } from '@temporalio/client';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeelClient } from '../../client/index';
import { generateKeyLine, keelDataConverter } from '../../worker/encryption';
import { workflowsPath } from '../../worker/worker';
import { goalEventsQuery, type GoalLogEntry, type LogEntry } from '../../workflows/definitions';
import { plan, planner, task } from '../fixtures/goal-harness';
import { sessionEnv, waitUntil } from '../fixtures/session-harness';
import { closeTestEnv } from '../fixtures/worker-teardown';
import { bundle, connectTestEnv, type TemporalTestEnv } from '../helpers/temporal';

let env: TemporalTestEnv;
let workflowBundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  env = await connectTestEnv();
  workflowBundle = await bundle(workflowsPath);
});
afterAll(async () => {
  await closeTestEnv(env);
});

const refusal = async (p: Promise<unknown>) => {
  const error = await p.catch((e: unknown) => e);
  expect(error).toBeInstanceOf(WorkflowUpdateFailedError);
  return String((error as WorkflowUpdateFailedError).cause?.message);
};

describe('bare controls with encryption keys', () => {
  it('a paused session and a plan waiting for approval move only for a key holder', async () => {
    const keys = { KEEL_ENCRYPTION_KEYS: generateKeyLine('k1') };
    const s = await sessionEnv(
      env,
      workflowBundle,
      {
        rules: [
          { match: planner(), reply: plan([task('code', 'Write the code', 'Write app.txt.')]) },
        ],
      },
      keys,
    );
    const secure = new Client({ connection: env.client.connection, namespace: env.namespace, dataConverter: await keelDataConverter(keys) });
    const plain = env.client;
    await s.run(async () => {
      const keel = await KeelClient.connect({ client: secure, taskQueue: s.taskQueue });
      const session = await keel.startSession({ workspace: s.workspace, policy: { mode: 'ask' } });
      await waitUntil(() => session.state(), (st) => st.status === 'active', 30_000, 'session ready');
      expect(await session.pause('lunch')).toEqual({ status: 'paused' });

      // Bare, from a client without the keys and from one with them: nothing to check, refused.
      expect(await refusal(plain.workflow.getHandle(session.id).executeUpdate('resume'))).toMatch(/refused resume: it carries no payload/);
      expect(await refusal(secure.workflow.getHandle(session.id).executeUpdate('resume'))).toMatch(/refused resume: it carries no payload/);
      expect(await refusal(plain.workflow.getHandle(session.id).executeUpdate('stop'))).toMatch(/refused stop: it carries no payload/);
      expect(await refusal(plain.workflow.getHandle(session.id).executeUpdate('reset'))).toMatch(/refused reset: it carries no payload/);
      // With a plaintext `{}`: not encrypted with a Keel key.
      expect(await refusal(plain.workflow.getHandle(session.id).executeUpdate('resume', { args: [{}] }))).toMatch(/not encrypted with a Keel key/);
      await plain.workflow.getHandle(session.id).signal('resume');
      const rejected = await waitUntil(
        async () => (await session.log()).entries,
        (entries: LogEntry[]) => entries.some((e) => e.kind === 'event.rejected' && (e as { source?: string }).source === 'signal resume'),
        30_000,
        'rejected signal',
      );
      expect(rejected.filter((e) => e.kind === 'session.resumed')).toEqual([]);
      expect((await session.state()).status).toBe('paused');
      // Keel's client: its encrypted `{}` is accepted.
      expect(await session.resume()).toEqual({ status: 'active' });

      const goal = await keel.startGoal('An app', { policy: { mode: 'full-auto' } });
      await waitUntil(() => goal.state(), (st) => st.status === 'awaiting_plan_approval', 30_000, 'plan approval');
      expect(await refusal(plain.workflow.getHandle(goal.id).executeUpdate('approvePlan'))).toMatch(/refused approvePlan: it carries no payload/);
      await plain.workflow.getHandle(goal.id).signal('approvePlan');
      const goalLog = await waitUntil(
        async () => (await goal.workflowHandle.query(goalEventsQuery, { from: 0, limit: 500 })).entries,
        (entries: GoalLogEntry[]) => entries.some((e) => e.kind === 'event.rejected'),
        30_000,
        'rejected approvePlan signal',
      );
      expect(goalLog.find((e) => e.kind === 'event.rejected')).toMatchObject({ source: 'signal approvePlan' });
      expect((await goal.state()).status).toBe('awaiting_plan_approval');
      expect(await goal.approvePlan()).toEqual({ status: 'executing' });
      const approved = (await goal.workflowHandle.query(goalEventsQuery, { from: 0, limit: 500 })).entries.filter((e) => e.kind === 'plan.approved');
      expect(approved).toEqual([expect.objectContaining({ planVersion: 1, by: 'human' })]);
      await goal.cancel('test over');
      await session.close('test over');
    });
  });
});
