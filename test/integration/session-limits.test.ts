// Budgets, the error threshold, closing and the idle timeout, on a real worker with the
// model stand-in.
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workflowsPath } from '../../worker/worker';
import { closeSignal, eventsQuery, raiseBudgetUpdate, resetUpdate, usageQuery, userMessageSignal, userMessageUpdate } from '../../workflows/definitions';
import { recordHistory, say, sessionEnv } from '../fixtures/session-harness';
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

describe('session limits', () => {
  it('budget exhaustion suspends the session with the reason; raiseBudget continues with the queued message', async () => {
    const s = await sessionEnv(env, workflowBundle, {
      rules: [{ match: {}, reply: say('Forty tokens of wisdom.', { usage: { input_tokens: 10, output_tokens: 40 } }) }],
    });
    await s.run(async () => {
      const run = await s.start({ limits: { outputTokens: 60 } });
      await run.handle.executeUpdate(userMessageUpdate, { args: ['one'] });
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 1);
      await run.handle.executeUpdate(userMessageUpdate, { args: ['two'] });
      const suspended = await run.waitForState((v) => v.status === 'suspended');
      expect(suspended.reason).toBe('budget');
      // The second turn was sent with the 20 output tokens left (the budget is a ceiling before the call).
      expect(suspended.usage.exhaustion).toMatchObject({ limit: 'output_tokens', allowed: 60, used: 60, over: 0 });
      expect((await run.log()).map((e) => e.kind)).toContain('budget.exhausted');
      expect((await run.log()).find((e) => e.kind === 'session.suspended')).toMatchObject({ reason: 'budget' });
      expect((await run.handle.describe()).searchAttributes.KeelStatus).toEqual(['suspended']);

      // A message while suspended waits; a raise that still leaves the budget spent is not enough.
      await run.handle.signal(userMessageSignal, 'three');
      await run.handle.executeUpdate(raiseBudgetUpdate, { args: [{ outputTokens: 60 }] });
      expect((await run.state()).status).toBe('suspended');
      const raised = await run.handle.executeUpdate(raiseBudgetUpdate, { args: [{ outputTokens: 1_000 }] });
      expect(raised.status).toBe('processing');
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 3);
      const usage = await run.handle.query(usageQuery);
      expect(usage.usage.outputTokens).toBe(100);
      expect(usage.limits.outputTokens).toBe(1_000);
      expect((await run.log()).find((e) => e.kind === 'session.unsuspended')).toMatchObject({ via: 'raise_budget' });
      await recordHistory(run.handle, 'budget-raise');
    });
  });

  it('three model failures in a row suspend the session; reset recovers and the next message is answered', async () => {
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        { match: { lastUserContains: 'broken' }, fault: { kind: 'status', status: 400, message: 'messages: scripted bad request' } },
        { match: { lastUserContains: 'working' }, reply: say('Back to normal.') },
      ],
    });
    await s.run(async () => {
      const run = await s.start();
      for (const n of [1, 2, 3]) await run.handle.signal(userMessageSignal, `broken ${n}`);
      const suspended = await run.waitForState((v) => v.status === 'suspended', 30_000);
      expect(suspended.reason).toBe('error_threshold');
      expect(suspended.session.errorStreak).toBe(3);
      expect((await run.log()).filter((e) => e.kind === 'turn.error')).toHaveLength(3);
      expect((await run.log()).find((e) => e.kind === 'turn.error')).toMatchObject({ errorType: 'non_retryable' });

      await run.handle.signal(userMessageSignal, 'working again?');
      await run.handle.executeUpdate(resetUpdate, { args: [{}] });
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 4);
      expect((await run.log()).find((e) => e.kind === 'session.unsuspended')).toMatchObject({ via: 'reset' });
      expect((await run.log()).filter((e) => e.kind === 'turn.completed').map((e) => (e as { finalOutput: string }).finalOutput)).toEqual(['Back to normal.']);
      await recordHistory(run.handle, 'errors-reset');
    });
  });

  it('close during a turn interrupts it and completes with final stats; the idle timeout closes an idle session', async () => {
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        // Held mid-answer until the close interrupts it: it cannot end first, however slow the machine.
        { match: { lastUserContains: 'ramble' }, reply: say('On and on. '.repeat(200), { delayMs: 30, chunkSize: 5 }), fault: { kind: 'hang' as const, afterEvents: 10 } },
        { match: { lastUserContains: 'hi' }, reply: say('Hello.', { usage: { input_tokens: 7, output_tokens: 3 } }) },
      ],
    });
    await s.run(async () => {
      const busy = await s.start();
      await busy.handle.executeUpdate(userMessageUpdate, { args: ['ramble'] });
      await busy.waitForState((v) => v.turn?.status === 'calling_llm');
      await busy.handle.signal(closeSignal, { reason: 'bye' });
      const closed = await busy.handle.result();
      expect(closed).toMatchObject({ outcome: 'closed', reason: 'bye', stats: { turns: 1 } });
      const kinds = (await busy.handle.query(eventsQuery)).entries.map((e) => e.kind);
      expect(kinds).toContain('session.closing');
      expect(kinds).toContain('turn.interrupted');

      const idle = await s.start({ idleTimeoutMs: 1_500 });
      await idle.handle.executeUpdate(userMessageUpdate, { args: ['hi'] });
      const started = Date.now();
      const result = await idle.handle.result();
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
      expect(result).toMatchObject({ outcome: 'closed', reason: 'timeout', stats: { turns: 1, usage: { outputTokens: 3 } } });
      expect((await idle.handle.describe()).searchAttributes.KeelStatus).toEqual(['closed']);
      await recordHistory(busy.handle, 'close-during-turn');
      await recordHistory(idle.handle, 'idle-timeout');
    });
  });
});
