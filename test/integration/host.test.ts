// The machine host (workflows/host.ts) seen from outside: the `metrics` query of sessions,
// goals and agents (transition counts from the host's observers); `send` resolving by
// message id; and a session under a steady queue of messages that still continues as new,
// handing the queue over to the next run in order.
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeelClient } from '../../client/index';
import { workflowsPath } from '../../worker/worker';
import { metricsQuery, resumeSignal, transcriptQuery, type MetricsView } from '../../workflows/definitions';
import { agent, critic, finish, goalEnv, plan, planner, review, task } from '../fixtures/goal-harness';
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

/** How many times `machine` took `event` (any from / to), from the metrics query. */
const taken = (m: MetricsView, machine: string, event: string) =>
  Object.entries(m.machines[machine]?.transitions ?? {})
    .filter(([key]) => key.includes(` --${event}--> `))
    .reduce((sum, [, n]) => sum + n, 0);

describe('machine host', () => {
  it('send resolves each of two identical messages with its own turn; metrics count the session and turn transitions', async () => {
    const s = await sessionEnv(env, workflowBundle, { rules: [{ match: { lastUserContains: 'same words' }, reply: say('Same answer.', { delayMs: 200 }) }] });
    await s.run(async () => {
      const keel = await KeelClient.connect({ client: env.client, taskQueue: s.taskQueue });
      const session = await keel.startSession({ workspace: s.workspace });
      // Both wait in the queue before either turn starts (the old text match took the first
      // turn.started of that text for both).
      await waitFor(() => session.state(), (v) => v.status === 'active');
      await session.pause();
      const sending = Promise.all([session.send('same words'), session.send('same words')]);
      await waitFor(() => session.state(), (v) => v.queueLength === 2);
      await session.resume();
      const [a, b] = await sending;
      expect(a.messageId).not.toBe(b.messageId);
      expect(a.turnId).not.toBe(b.turnId);
      expect([a.outcome, b.outcome]).toEqual(['completed', 'completed']);
      // Each message's own turn: the log says which message each turn started from.
      const log = await session.log();
      const started = new Map(log.entries.filter((e) => e.kind === 'session.message_received').map((e) => [(e as { messageId: string }).messageId, e.seq]));
      expect(started.has(a.messageId) && started.has(b.messageId)).toBe(true);
      const turnOrder = log.entries.filter((e) => e.kind === 'turn.started').map((e) => (e as { turnId: string }).turnId);
      expect(new Set([a.turnId, b.turnId])).toEqual(new Set(turnOrder));

      // A signal the machine refuses is counted as a refusal.
      await session.workflowHandle.signal(resumeSignal, {});
      const metrics = await waitFor(
        () => session.workflowHandle.query(metricsQuery),
        (m) => Object.keys(m.machines.session?.rejected ?? {}).some((k) => k.includes('resume')),
      );
      expect(taken(metrics, 'session', 'turn_finished')).toBe(2);
      expect(taken(metrics, 'session', 'user_message')).toBe(2);
      expect(taken(metrics, 'turn', 'start')).toBe(2);
      expect(metrics.machines.session!.rejected).toEqual({ 'active × resume (not_allowed)': 1 });
      await session.close();
    });
  });

  it('a session under a steady queue continues as new anyway: the queue is handed over, nothing lost, order kept', async () => {
    const rules = Array.from({ length: 6 }, (_, i) => ({ match: { lastUserContains: `message ${i + 1}.` }, reply: say(`Answer ${i + 1}.`, { delayMs: 400 }) }));
    const s = await sessionEnv(env, workflowBundle, { rules });
    await s.run(async () => {
      const keel = await KeelClient.connect({ client: env.client, taskQueue: s.taskQueue });
      const session = await keel.startSession({ workspace: s.workspace, continueAsNewAfterTurns: 2 });
      // All six are queued before the first turn starts (paused; the first turn's 0.4 s answer
      // ended before the sixth was posted on a busy machine): the queue is never empty at a
      // turn's end until the last one.
      await waitFor(() => session.state(), (v) => v.status === 'active');
      await session.pause();
      const sent = [];
      for (let i = 1; i <= 6; i++) sent.push(await session.post(`message ${i}.`));
      expect(sent.every((r) => r.queued)).toBe(true);
      await session.resume();
      // Each waits for its own turn across the runs (the update answers `moved` at a hand-over).
      const outcomes = await Promise.all(sent.map((r) => session.turnOf(r.messageId)));
      expect(outcomes.map((o) => [o.messageId, o.outcome, o.output])).toEqual(sent.map((r, i) => [r.messageId, 'completed', `Answer ${i + 1}.`]));
      const state = await waitFor(() => session.state(), (v) => v.session.turns === 6, 60_000);
      // Two turns a run, though the queue was never empty before the sixth turn: runs 1–3
      // took two turns each, and the quiet point after the sixth started run 4. (Before the
      // hand-over, run 1 took all six: the queue was never empty at a turn's end.)
      expect(state.run).toBe(4);
      const transcript = await session.workflowHandle.query(transcriptQuery, { from: 0, limit: 100 });
      const said = (role: string) => transcript.messages.filter((m) => m.role === role).map((m) => /(?:message|Answer) (\d)/.exec(JSON.stringify(m.content))?.[1]);
      expect(said('user')).toEqual(['1', '2', '3', '4', '5', '6']);
      expect(said('assistant')).toEqual(['1', '2', '3', '4', '5', '6']);
      await session.close();
      // Run 1 handed a queued turn over; run 2 started it (the replay test, with KEEL_RECORD_HISTORIES=1).
      const first = (await session.workflowHandle.describe()).runId;
      const chain = [first];
      for (let i = 0; i < 3; i++) {
        const started = (await env.client.workflow.getHandle(session.id, chain[0]).fetchHistory()).events?.[0]?.workflowExecutionStartedEventAttributes;
        chain.unshift(started!.continuedExecutionRunId!);
      }
      await recordHistory(env.client.workflow.getHandle(session.id, chain[0]), 'queue-handover-run-1');
      await recordHistory(env.client.workflow.getHandle(session.id, chain[1]), 'queue-handover-run-2');
    });
  });

  it('goals and their agents answer metrics: the autonomy machine by transition, the agent its turn', async () => {
    const g = await goalEnv(env, workflowBundle, {
      rules: [
        { match: planner(), reply: plan([task('a', 'Task a', 'Say done.'), task('b', 'Task b', 'Say done.')]) },
        { match: agent('a'), reply: finish('Done a.') },
        { match: agent('b'), reply: finish('Done b.') },
        { match: critic(), reply: review('pass', 'Both done.') },
      ],
    });
    await g.run(async () => {
      const run = await g.start({ goal: 'Two tasks', autoApprove: true });
      const result = await run.handle.result();
      expect(result.verdict).toBe('goal_met');
      const goalMetrics = await run.handle.query(metricsQuery);
      expect(taken(goalMetrics, 'autonomy', 'task_finished')).toBe(2);
      expect(taken(goalMetrics, 'autonomy', 'plan_proposed')).toBe(1);
      expect(taken(goalMetrics, 'autonomy', 'review_done')).toBe(1);
      const agentMetrics = await env.client.workflow.getHandle(`${run.handle.workflowId}/task-a/1`).query(metricsQuery);
      expect(taken(agentMetrics, 'turn', 'start')).toBe(1);
      expect(taken(agentMetrics, 'turn', 'model_response')).toBeGreaterThanOrEqual(1);
    });
  });
});

async function waitFor<T>(read: () => Promise<T>, predicate: (v: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (predicate(v)) return v;
    if (Date.now() > until) throw new Error(`timed out; last: ${JSON.stringify(v).slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
