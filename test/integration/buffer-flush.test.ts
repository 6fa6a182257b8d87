// A signal flood while a workflow task is in flight: the Temporal server buffers the signals
// and, once they pass its buffered-events limit (history.maximumBufferedEventsSizeInBytes,
// 2 MB by default), fails the task in flight itself — WorkflowTaskFailed, cause
// FORCE_CLOSE_COMMAND, identity "history-service" — so that the buffer is written to history
// and a fresh task sees every signal. No workflow code runs in that decision, and any
// workflow, Keel's or a bare one, meets it the same way (bench/results/fuzz.json counts it
// apart from failures of workflow code, as `serverForcedRetries`). What Keel must show is
// that nothing is lost: every message of the flood becomes a turn.
import { describe, expect, it } from 'vitest';
import { userMessageSignal } from '../../workflows/definitions';
import { say, sessionEnv } from '../fixtures/session-harness';
import { historyEvents } from '../chaos/fuzz';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();

/** temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_FORCE_CLOSE_COMMAND */
const FORCE_CLOSE_COMMAND = 17;

describe('a flood of large signals during a workflow task', () => {
  it('the server fails the task in flight; the session then takes every message, none lost', async () => {
    const s = await sessionEnv(env, workflowBundle, { rules: [{ match: {}, reply: say('noted') }] });
    // The session starts before any worker polls, so its first workflow task waits for us.
    const run = await s.start();
    const firstRunId = (await run.handle.describe()).runId;
    // In pages of two events: three 1 MB signals exceed gRPC's 4 MB message limit in one.
    const historyOf = (runId: string) => historyEvents(env.client, env.namespace, run.handle.workflowId, { runId, pageSize: 2 });
    const flood = async () => {
      // Hold that task as a worker would while it runs a long activation: polled, not completed.
      const held = await env.client.connection.withDeadline(Date.now() + 30_000, () =>
        env.client.workflowService.pollWorkflowTaskQueue({ namespace: env.namespace, taskQueue: { name: s.taskQueue }, identity: 'a slow worker' }),
      );
      expect(held.workflowExecution?.workflowId).toBe(run.handle.workflowId);
      // Three messages of 1 MB each: 3 MB buffered behind the task in flight.
      for (const i of [1, 2, 3]) await run.handle.signal(userMessageSignal, `message ${i} ${'ü'.repeat(512 * 1024)}`);
    };
    const flooded = await flood().then(() => null, (error: unknown) => (error instanceof Error ? error : new Error(String(error))));

    // The worker runs (and is shut down) whatever happened above.
    await s.run(async () => {
      if (flooded) throw flooded;
      const state = await run.waitForState((v) => v.session.turns === 3 && v.status === 'active', 60_000);
      expect(state.session.turns).toBe(3);
      // The run that took the flood (the session may have continued as new since: 3 MB of history).
      const events = await historyOf(firstRunId);
      const failed = events.flatMap((e) => (e.workflowTaskFailedEventAttributes ? [e.workflowTaskFailedEventAttributes] : []));
      // The task we held was failed by the server, not by workflow code; no other task failed.
      expect(failed.map((f) => [Number(f.cause), f.identity])).toEqual([[FORCE_CLOSE_COMMAND, 'history-service']]);
      const received = events.filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'userMessage');
      expect(received).toHaveLength(3);
    });
  }, 120_000);
});
