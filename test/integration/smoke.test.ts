import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker, type WorkerOptions } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { temporalServers } from '../helpers/temporal-servers';
import * as activities from '../fixtures/smoke-activities';
import { addItem, finish, items, limitQuery, setLimit, sleeper, smokeWorkflow, spinner } from '../fixtures/smoke-workflow';
import { uniqueTaskQueue, WORKFLOW_DEADLOCK_TIMEOUT, WORKFLOWS_ON_CALLING_THREAD } from '../helpers/temporal';
import { useTemporal } from '../fixtures/use-temporal';

const here = path.dirname(fileURLToPath(import.meta.url));
const workflowsPath = path.join(here, '../fixtures/smoke-workflow.ts');

// The fixture imports none of Keel's preloaded modules: nothing to preload.
const { env, workflowBundle } = useTemporal({ workflows: workflowsPath, preload: false });

describe('smoke: a real worker against a real temporal server start-dev', () => {
  it('runs signals, queries, a validated update and a retried activity', async () => {
    console.log(`server under test: ${temporalServers().version} at ${env.address}`);
    const taskQueue = uniqueTaskQueue('smoke');
    const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle, activities, ...WORKFLOWS_ON_CALLING_THREAD });

    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(smokeWorkflow, {
        taskQueue,
        workflowId: `smoke-${taskQueue}`,
        args: ['keel'],
      });

      await handle.signal(addItem, 'a');
      await handle.signal(addItem, 'b');
      await handle.signal(addItem, 'c'); // over the limit of 2: dropped
      expect(await handle.query(items)).toEqual(['a', 'b']);

      const rejected = await handle.executeUpdate(setLimit, { args: [-1] }).catch((error: unknown) => error);
      expect(rejected).toBeInstanceOf(WorkflowUpdateFailedError);
      expect(String((rejected as WorkflowUpdateFailedError).cause?.message)).toContain(
        'limit must be a positive integer, got -1',
      );
      expect(await handle.query(limitQuery)).toBe(2);

      expect(await handle.executeUpdate(setLimit, { args: [5] })).toBe(2);
      await handle.signal(addItem, 'd');
      await handle.signal(finish);

      expect(await handle.result()).toEqual({ greeting: 'hello, keel', attempt: 2, items: ['a', 'b', 'd'], limit: 5 });

      const history = await handle.fetchHistory();
      const kinds = (history.events ?? []).map((event) => Object.keys(event).find((key) => key.endsWith('EventAttributes')));
      // A rejected update leaves no trace in history; the accepted one does, once.
      expect(kinds.filter((kind) => kind === 'workflowExecutionUpdateAcceptedEventAttributes')).toHaveLength(1);
      if (process.env.KEEL_RECORD_HISTORIES) {
        writeFileSync(path.join(here, '../histories/smoke/smoke-workflow.json'), historyToJSON(history));
      }
    });
  });

  it('fails the task of a workflow that never yields, with the workflows on the test fork\'s thread', async () => {
    // The tests' workers run workflows on the fork's own thread (WORKFLOWS_ON_CALLING_THREAD):
    // without the deadlock detector, a workflow stuck in a loop would block the fork for good.
    // The SDK reads the detector's timeout without declaring it; 1 s here instead of the
    // constant's minute (worker/worker.ts), since each attempt blocks this fork for that long.
    expect(WORKFLOWS_ON_CALLING_THREAD.isolateExecutionTimeout).toBe(WORKFLOW_DEADLOCK_TIMEOUT);
    const taskQueue = uniqueTaskQueue('spinner');
    const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle, activities, ...WORKFLOWS_ON_CALLING_THREAD, isolateExecutionTimeout: '1s' } as WorkerOptions);
    const started = Date.now();
    const failure = await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(spinner, { taskQueue, workflowId: `spinner-${taskQueue}` });
      try {
        for (;;) {
          const history = await handle.fetchHistory();
          const failed = history.events?.find((e) => e.workflowTaskFailedEventAttributes)?.workflowTaskFailedEventAttributes;
          if (failed) return failed.failure?.message ?? '';
          if (Date.now() - started > 30_000) throw new Error('no workflow task failed in 30 s');
          await new Promise((r) => setTimeout(r, 200));
        }
      } finally {
        await handle.terminate('spinner checked');
      }
    });
    // Failed by the detector (its message), not by the 10 s task timeout, which fails no task
    // with a message but times it out; how soon it failed depends on the machine, not the detector.
    expect(failure).toMatch(/Script execution timed out after 1000ms/);
  });

  it('skips time on the time-skipping test server (installed from PyPI)', async () => {
    const testEnv = await TestWorkflowEnvironment.createTimeSkipping({
      server: { executable: { type: 'existing-path', path: temporalServers().testServerPath } },
    });
    try {
      const taskQueue = uniqueTaskQueue('sleeper');
      const worker = await Worker.create({ connection: testEnv.nativeConnection, taskQueue, workflowBundle, activities, ...WORKFLOWS_ON_CALLING_THREAD });
      const wallStart = Date.now();
      const result = await worker.runUntil(
        testEnv.client.workflow.execute(sleeper, { taskQueue, workflowId: `sleeper-${taskQueue}`, args: [30] }),
      );
      expect(result.elapsedMs).toBeGreaterThanOrEqual(30 * 24 * 3600 * 1000);
      // Thirty days of workflow time pass in seconds of real time.
      expect(Date.now() - wallStart).toBeLessThan(60_000);
    } finally {
      await testEnv.teardown();
    }
  });
});
