// Controls that name nothing (`resume`, `stop`, `reset`, `restart`, a goal's `approvePlan`)
// had no payload for encryption to authenticate: anyone who reached Temporal could resume a
// paused session or approve a plan, keys or not. Keel's clients now send them with an
// (encrypted) `{}`, and a workflow started by a client holding the keys refuses the bare
// form — plaintext `{}` is refused as every plaintext payload is. Real worker with keys,
// dev server, stand-in.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Client, WorkflowUpdateFailedError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { KeelClient } from '../../client/index';
import { resolveTemporalCli } from '../../worker/dev-server';
import { generateKeyLine, keelDataConverter } from '../../shared/encryption';
import { goalEventsQuery, type GoalLogEntry, type LogEntry } from '../../workflows/definitions';
import { plan, planner, task } from '../fixtures/goal-harness';
import { sessionEnv, waitUntil } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();

const run = promisify(execFile);

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

  // interrupt, pause, close and a goal's cancel take an optional reason, so a call with no
  // payload at all passed — the one thing encryption checks: any Temporal client could close,
  // pause or interrupt a run started with the keys. Bare, each is now refused where the
  // sender can see it (a rejected update, an `event.rejected` entry), and nothing changes.
  it('interrupt, pause, close and cancel with no payload are refused; Keel\'s client still works', async () => {
    const keys = { KEEL_ENCRYPTION_KEYS: generateKeyLine('k1') };
    const s = await sessionEnv(env, workflowBundle, { rules: [{ match: planner(), reply: plan([task('code', 'Write the code', 'Write app.txt.')]) }] }, keys);
    const secure = new Client({ connection: env.client.connection, namespace: env.namespace, dataConverter: await keelDataConverter(keys) });
    const plain = env.client;
    const cli = await resolveTemporalCli();
    await s.run(async () => {
      const keel = await KeelClient.connect({ client: secure, taskQueue: s.taskQueue });
      const session = await keel.startSession({ workspace: s.workspace, policy: { mode: 'ask' } });
      await waitUntil(() => session.state(), (st) => st.status === 'active', 30_000, 'session ready');

      for (const name of ['interrupt', 'pause', 'close']) {
        expect(await refusal(plain.workflow.getHandle(session.id).executeUpdate(name))).toMatch(new RegExp(`refused ${name}: it carries no payload`));
        expect(await refusal(secure.workflow.getHandle(session.id).executeUpdate(name))).toMatch(new RegExp(`refused ${name}: it carries no payload`));
        // The reason as plaintext JSON: not encrypted with a Keel key.
        expect(await refusal(plain.workflow.getHandle(session.id).executeUpdate(name, { args: [{ reason: 'forged' }] }))).toMatch(/not encrypted with a Keel key/);
        await plain.workflow.getHandle(session.id).signal(name);
        // The Temporal CLI, as an operator without the keys would use it: no --input, then JSON.
        await run(cli, ['workflow', 'signal', '--address', env.address, '--namespace', env.namespace, '--workflow-id', session.id, '--name', name]);
        await run(cli, ['workflow', 'signal', '--address', env.address, '--namespace', env.namespace, '--workflow-id', session.id, '--name', name, '--input', '{"reason":"cli"}']);
      }
      const rejected = await waitUntil(
        async () => (await session.log()).entries,
        (entries: LogEntry[]) => ['interrupt', 'pause', 'close'].every((n) => entries.filter((e) => e.kind === 'event.rejected' && (e as { source?: string }).source === `signal ${n}`).length === 3),
        30_000,
        'three rejected signals of each',
      );
      expect(rejected.filter((e) => e.kind === 'event.rejected' && /carries no payload/.test((e as { message?: string }).message ?? '')).length).toBe(6);
      expect(rejected.filter((e) => ['session.paused', 'session.closing', 'session.closed', 'session.control'].includes(e.kind))).toEqual([]);
      expect((await session.state()).status).toBe('active');
      // Keel's client, with and without a reason: accepted.
      expect(await session.pause()).toEqual({ status: 'paused' });
      expect(await session.resume()).toEqual({ status: 'active' });
      // (No turn runs, so the session machine refuses an interrupt — for that reason, not the payload's.)
      expect(await session.interrupt().then(() => 'accepted', (e: unknown) => (e as Error).message)).toMatch(/interrupt/);
      expect(await session.interrupt().then(() => 'accepted', (e: unknown) => (e as Error).message)).not.toMatch(/carries no payload|not encrypted/);

      const goal = await keel.startGoal('An app', { policy: { mode: 'full-auto' } });
      await waitUntil(() => goal.state(), (st) => st.status === 'awaiting_plan_approval', 30_000, 'plan approval');
      expect(await refusal(plain.workflow.getHandle(goal.id).executeUpdate('cancel'))).toMatch(/refused cancel: it carries no payload/);
      expect(await refusal(secure.workflow.getHandle(goal.id).executeUpdate('cancel'))).toMatch(/refused cancel: it carries no payload/);
      await plain.workflow.getHandle(goal.id).signal('cancel');
      await run(cli, ['workflow', 'signal', '--address', env.address, '--namespace', env.namespace, '--workflow-id', goal.id, '--name', 'cancel']);
      const goalLog = await waitUntil(
        async () => (await goal.workflowHandle.query(goalEventsQuery, { from: 0, limit: 500 })).entries,
        (entries: GoalLogEntry[]) => entries.filter((e) => e.kind === 'event.rejected' && (e as { source?: string }).source === 'signal cancel').length === 2,
        30_000,
        'rejected cancel signals',
      );
      expect(goalLog.filter((e) => e.kind === 'event.rejected').every((e) => /carries no payload|not encrypted/.test((e as { message?: string }).message ?? ''))).toBe(true);
      expect((await goal.state()).status).toBe('awaiting_plan_approval');
      expect(await goal.cancel()).toEqual({ status: 'stopped' });
      expect(await session.close()).toEqual({ status: 'closed' });
    });
  }, 120_000);
});
