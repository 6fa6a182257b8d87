// Under CPU starvation a session's workflow task times out or fails, and after two such
// attempts the server turns updates away unseen ("Workflow Task in failed state",
// FAILED_PRECONDITION) until an attempt completes. That is load, not an answer: Keel's client
// asks again (client/grpc-retry.ts) and the caller's send() gets its turn. Here the task is
// failed on purpose (the test takes it from the queue and reports it failed, three times) while
// no worker runs; a send() then meets the failed state, and is answered once a worker starts.
import { Client, Connection, WorkflowUpdateStage } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { ClosableConnection } from '../../client/grpc-retry';
import { KeelClient } from '../../client/index';
import { SESSION_CONTROLS } from '../../workflows/protocol/session';
import { say, sessionEnv, waitUntil } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();

describe('a workflow task in failed state under load', () => {
  it('send() is retried until the task recovers, not failed to its caller', async () => {
    const s = await sessionEnv(env, workflowBundle, { rules: [{ match: {}, reply: say('Hello after the storm.') }] });
    const retried: string[] = [];
    const connection = await ClosableConnection.connect({ address: env.address }, (status) => retried.push(`${status.code} ${status.details ?? ''}`));
    const plain = await Connection.connect({ address: env.address });
    try {
      const keel = await KeelClient.connect({ client: new Client({ connection, namespace: env.namespace }), taskQueue: s.taskQueue });
      // No worker yet: the session's first task waits in the queue.
      const session = await keel.startSession({ workspace: s.workspace, policy: { mode: 'full-auto' } });
      const service = env.client.workflowService;
      for (let attempt = 1; attempt <= 3; attempt += 1) {
        const task = await env.client.connection.withDeadline(Date.now() + 30_000, () =>
          service.pollWorkflowTaskQueue({ namespace: env.namespace, taskQueue: { name: s.taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL }, identity: 'the test, a starved worker' }),
        );
        expect(task.workflowExecution?.workflowId).toBe(session.id);
        await service.respondWorkflowTaskFailed({
          namespace: env.namespace,
          taskToken: task.taskToken,
          cause: temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE,
          failure: { message: 'starved' },
          identity: 'the test, a starved worker',
        });
      }
      // The state is real: a client without Keel's retry is turned away at once.
      const bare = new Client({ connection: plain, namespace: env.namespace }).workflow.getHandle(session.id);
      const refused = await bare.startUpdate(SESSION_CONTROLS.interrupt.update, { args: [{}], waitForStage: WorkflowUpdateStage.ACCEPTED }).then(() => null, (e: unknown) => e);
      expect(String((refused as Error | null)?.cause)).toMatch(/FAILED_PRECONDITION: .*Workflow Task in failed state/);

      // Keel's send() meets the same state and is asked again; a worker starting takes the task.
      const turn = session.send('hello');
      await waitUntil(async () => retried, (r) => r.some((line) => /^9 .*failed state/.test(line)), 20_000, 'the send to be turned away and retried');
      const outcome = await s.run(() => turn);
      expect(outcome.outcome).toBe('completed');
      expect(outcome.output).toBe('Hello after the storm.');
    } finally {
      await plain.close();
      await connection.close();
    }
  });
});
