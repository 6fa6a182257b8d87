// KeelWaiting on a server set up before it existed: a namespace with Keel's other search
// attributes registered but not KeelWaiting. A workflow that upserted it there would have its
// workflow task failed again and again; instead the run asks its worker once whether the
// namespace has it (a local activity, recorded) and writes nothing. The run waits (for a
// workspace host that never polls) showing `waiting` as before, with no workflow task failed.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { describe, expect, it } from 'vitest';
import { createKeelWorker } from '../../worker/worker';
import { stateQuery } from '../../workflows/definitions';
import { keelSearchAttributes, KeelWaiting } from '../../workflows/search-attributes';
import { sessionWorkflow } from '../../workflows/session';
import { KEY, waitUntil } from '../fixtures/session-harness';
import { stopWhenTestEnds } from '../fixtures/worker-teardown';
import { uniqueTaskQueue } from '../helpers/temporal';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();

describe('KeelWaiting on a namespace that does not have it registered', () => {
  it('is not written: the run waits as before, and no workflow task fails', async () => {
    const namespace = `keel-before-waiting-${randomUUID().slice(0, 8)}`;
    const service = env.client.connection;
    await service.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') });
    const others = keelSearchAttributes.filter((k) => k.name !== KeelWaiting.name);
    const type = { KEYWORD: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD, INT: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_INT } as const;
    await waitUntil(
      () => service.operatorService.addSearchAttributes({ namespace, searchAttributes: Object.fromEntries(others.map((k) => [k.name, type[k.type]])) }).then(() => true, () => false),
      (ok) => ok,
      60_000,
      'the namespace to take search attributes',
    );
    const listed = await service.operatorService.listSearchAttributes({ namespace });
    expect(Object.keys(listed.customAttributes ?? {})).not.toContain(KeelWaiting.name);

    const taskQueue = uniqueTaskQueue('waiting-unregistered');
    const store = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-waiting-attr-'));
    const workspace = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-waiting-ws-'));
    const worker = await createKeelWorker({ connection: env.nativeConnection, namespace, taskQueue, workflowBundle, workflowsOnCallingThread: true, env: { ANTHROPIC_API_KEY: KEY, KEEL_STORE_DIR: store }, log: () => {} });
    const client = new Client({ connection: service, namespace });
    const running = worker.run();
    const stop = stopWhenTestEnds(worker.worker, running, async () => {
      await fs.rm(store, { recursive: true, force: true });
      await fs.rm(workspace, { recursive: true, force: true });
    });
    try {
      // Its workspace host never polls: setup waits for it, which is when KeelWaiting would be written.
      const handle = await client.workflow.start(sessionWorkflow, { taskQueue, workflowId: `${taskQueue}-s`, args: [{ workspace, workspaceHost: 'host-nowhere', workspaceHostWaitMs: 1_000 }] });
      await waitUntil(() => handle.query(stateQuery).catch(() => null), (s) => (s?.waiting ?? '').includes('workspace host "host-nowhere"') && /\d+ tries/.test(s?.waiting ?? ''), 60_000, 'the wait, two tries in');
      const events = (await handle.fetchHistory()).events ?? [];
      const failed = events.filter((e) => e.workflowTaskFailedEventAttributes);
      expect(failed.map((e) => e.workflowTaskFailedEventAttributes?.failure?.message)).toEqual([]);
      // It asked (the local activity's marker), and wrote no KeelWaiting.
      expect(events.some((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity')).toBe(true);
      const upserted = events.flatMap((e) => Object.keys(e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {}));
      expect(upserted).not.toContain(KeelWaiting.name);
      expect((await handle.describe()).status.name).toBe('RUNNING');
      await handle.terminate('test over');
    } finally {
      await stop();
    }
  }, 120_000);
});
