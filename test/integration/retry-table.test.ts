// One retry table (machines/model-retry.ts) that the turn reads: with a row of it changed
// in the workflow code (test/fixtures/retry-row-workflows.ts), a session's turn waits what
// the row now says — the durable timer in its history and the turn.retry_scheduled event.
// Before, each turn carried its own 1/2/3 s copy and still waited 1 s.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { userMessageUpdate } from '../../workflows/definitions';
import { CHANGED_TRANSIENT_BACKOFF_MS } from '../fixtures/retry-row-workflows';
import { say, sessionEnv } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const changedWorkflows = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/retry-row-workflows.ts');

// Not preloaded: the fixture changes a row of machines/model-retry.ts's table, which a
// preloaded (shared, frozen) module would not let it do.
const { env, workflowBundle } = useTemporal({ workflows: changedWorkflows, preload: false });

describe('the retry table row a turn reads', () => {
  it('a changed row changes the turn’s retry timer', async () => {
    // The row as shipped waits 1 s first (test/unit/machines/retry-table.test.ts); changed, 1.7 s.
    expect(CHANGED_TRANSIENT_BACKOFF_MS[0]).not.toBe(1_000);
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        { name: 'down', match: { lastUserContains: 'hello' }, times: 1, fault: { kind: 'status', status: 500, message: 'internal error' } },
        { name: 'up', match: { lastUserContains: 'hello' }, reply: say('Hello again.') },
      ],
    });
    await s.run(async () => {
      const run = await s.start();
      await run.handle.executeUpdate(userMessageUpdate, { args: ['hello'] });
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 1);
      const log = await run.log();
      expect(log.filter((e) => e.kind === 'turn.retry_scheduled')).toEqual([expect.objectContaining({ attempt: 2, delayMs: CHANGED_TRANSIENT_BACKOFF_MS[0] })]);
      expect(log.find((e) => e.kind === 'session.turn_finished')).toMatchObject({ outcome: 'completed' });
      const history = await run.handle.fetchHistory();
      // The durable timer itself (Temporal names timers by sequence, so: by duration).
      const timers = (history.events ?? []).flatMap((e) => (e.timerStartedEventAttributes ? [e.timerStartedEventAttributes.startToFireTimeout] : []));
      const seconds = timers.map((t) => Number(t?.seconds ?? 0) + (t?.nanos ?? 0) / 1e9);
      expect(seconds).toContain(CHANGED_TRANSIENT_BACKOFF_MS[0]! / 1_000);
      expect(seconds).not.toContain(1);
      expect(s.standin.requests).toHaveLength(2);
    });
  });
});
