// "Approve for the session" on a real session: it grants exactly what the human saw,
// a broader rule only when the human gives one, and every answer says what was remembered.
import fs from 'node:fs/promises';
import path from 'node:path';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { approveUpdate, userMessageUpdate } from '../../workflows/definitions';
import { say, sessionEnv, use } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();

const rejection = async (promise: Promise<unknown>): Promise<string> => {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(WorkflowUpdateFailedError);
  return String((error as WorkflowUpdateFailedError).cause?.message);
};

describe('session approvals', () => {
  it('approving `rm -rf build` for the session does not approve `rm -rf /tmp/x`; a rule is remembered only when given', async () => {
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        { match: { lastUserContains: 'clean build again', hasToolResults: false }, reply: use('run_command', { command: 'rm -rf build' }, 'toolu_rm_2') },
        { match: { lastUserContains: 'clean build', hasToolResults: false }, reply: use('run_command', { command: 'rm -rf build' }, 'toolu_rm_1') },
        { match: { lastUserContains: 'clean tmp', hasToolResults: false }, reply: use('run_command', { command: 'rm -rf /tmp/x' }, 'toolu_rm_tmp') },
        { match: { lastUserContains: 'run tests', hasToolResults: false }, reply: use('run_command', { command: 'echo tests one' }, 'toolu_t1') },
        { match: { lastUserContains: 'more tests', hasToolResults: false }, reply: use('run_command', { command: 'echo tests two' }, 'toolu_t2') },
        { match: { hasToolResults: true }, reply: say('Done.') },
      ],
    });
    await fs.mkdir(path.join(s.workspace, 'build'));
    await s.run(async () => {
      const run = await s.start({ policy: { mode: 'ask' } });
      const approvalsAsked = async () => (await run.log()).filter((e) => e.kind === 'tool.approval_requested').length;

      await run.handle.executeUpdate(userMessageUpdate, { args: ['clean build'] });
      await run.waitForState((v) => v.pendingApprovals.length === 1);
      const approved = await run.handle.executeUpdate(approveUpdate, { args: [{ callId: 'toolu_rm_1', scope: 'session', approver: 'ada' }] });
      expect(approved.sessionRule).toBe('exactly run_command {"command":"rm -rf build"}');
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 1);
      await expect(fs.stat(path.join(s.workspace, 'build'))).rejects.toThrow(/ENOENT/);

      // Another rm -rf is another call: the human is asked.
      await run.handle.executeUpdate(userMessageUpdate, { args: ['clean tmp'] });
      const waiting = await run.waitForState((v) => v.pendingApprovals.length === 1);
      expect(waiting.pendingApprovals[0]).toMatchObject({ callId: 'toolu_rm_tmp', input: { command: 'rm -rf /tmp/x' } });
      expect(await approvalsAsked()).toBe(2);
      // A rule that does not cover the call is refused, with the reason.
      expect(await rejection(run.handle.executeUpdate(approveUpdate, { args: [{ callId: 'toolu_rm_tmp', scope: 'session', rule: 'run_command(npm test*)' }] }))).toContain(
        'does not cover the call being approved',
      );
      expect(await rejection(run.handle.executeUpdate(approveUpdate, { args: [{ callId: 'toolu_rm_tmp', rule: 'run_command(rm *)' }] }))).toContain(
        'a rule is remembered only with scope "session"',
      );
      await run.handle.executeUpdate(approveUpdate, { args: [{ callId: 'toolu_rm_tmp' }] });
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 2);

      // The exact call approved before runs again without asking.
      await fs.mkdir(path.join(s.workspace, 'build'));
      await run.handle.executeUpdate(userMessageUpdate, { args: ['clean build again'] });
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 3);
      expect(await approvalsAsked()).toBe(2);
      await expect(fs.stat(path.join(s.workspace, 'build'))).rejects.toThrow(/ENOENT/);

      // A rule the human gives covers what it says.
      await run.handle.executeUpdate(userMessageUpdate, { args: ['run tests'] });
      await run.waitForState((v) => v.pendingApprovals.length === 1);
      const ruled = await run.handle.executeUpdate(approveUpdate, { args: [{ callId: 'toolu_t1', scope: 'session', rule: 'run_command(echo tests*)', approver: 'ada' }] });
      expect(ruled.sessionRule).toBe('run_command(echo tests*)');
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 4);
      await run.handle.executeUpdate(userMessageUpdate, { args: ['more tests'] });
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 5);
      expect(await approvalsAsked()).toBe(3);
      // The real approver is recorded.
      const approvedEvents = (await run.log()).filter((e) => e.kind === 'tool.approved');
      // Raw Temporal updates carry no proof: what they say is recorded as a claim (shared/approver-proof.ts).
      expect(approvedEvents.map((e) => (e as { approver?: string }).approver)).toEqual(['claimed: ada via temporal client', 'claimed: (nobody) via temporal client', 'claimed: ada via temporal client']);
    });
  });
});
