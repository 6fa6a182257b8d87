// A fleet whose workers do not share one conversation store is caught at start: the
// issue's "two hosts, KEEL_STORE_DIR=A on one, =B on the other" passed every smoke test
// (workflows stick to the worker that ran them) and broke at the first failover. Now the
// second worker refuses to start, in one line naming both stores; a worker on the same
// store starts; and a session's calls are refused by a worker whose store is another.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clearIdentityCache, createStoreActivities, storeIdentity } from '../../activities/conversation-store';
import { createKeelWorker } from '../../worker/worker';
import { probeStore, StoreProbeError } from '../../worker/store-probe';
import { waitUntil } from '../fixtures/session-harness';
import { goalEnv, plan, planner, task, writesFile } from '../fixtures/goal-harness';
import { uniqueTaskQueue } from '../helpers/temporal';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();
let root: string;

beforeAll(async () => {
  root = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-fleet-'));
});
afterAll(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

describe('a fleet that does not share its conversation store', () => {
  it('the second worker refuses to start, in one line; a worker on the same store starts', async () => {
    const taskQueue = uniqueTaskQueue('fleet');
    const [dirA, dirB] = [path.join(root, 'host-a'), path.join(root, 'host-b')];
    const lines: string[] = [];
    const start = (extra: NodeJS.ProcessEnv) =>
      createKeelWorker({ connection: env.nativeConnection, namespace: env.namespace, taskQueue, workflowBundle, workflowsOnCallingThread: true, env: { ANTHROPIC_API_KEY: 'unused', ...extra }, log: (l) => lines.push(l) });
    const first = await start({ KEEL_STORE_DIR: dirA });
    expect(lines.at(-1)).toMatch(new RegExp(`^keel worker: conversation store: local ${dirA} \\(id [0-9a-f-]{36}, marked by this worker: the first of its fleet\\)$`));
    const idA = (await storeIdentity(dirA)).id;
    const running = first.run();
    try {
      // Temporal lists the first worker as a poller of the queue once it polls.
      await waitUntil(
        async () => (await env.client.workflowService.describeTaskQueue({ namespace: env.namespace, taskQueue: { name: taskQueue }, taskQueueType: 2 })).pollers ?? [],
        (pollers) => pollers.some((p) => (p.identity ?? '').startsWith(`keel-store=${idA} `)),
        30_000,
        'the first worker to poll',
      );

      const refused = await start({ KEEL_STORE_DIR: dirB }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(refused).toBeInstanceOf(StoreProbeError);
      expect((refused as Error).message).toMatch(
        new RegExp(
          `^keel worker: refusing to start: 1 worker polling task queue "${taskQueue}" use conversation store ${idA}, but this one's is local ${dirB} \\(id [0-9a-f-]{36}\\); give it the fleet's KEEL_STORE_URL / KEEL_STORE_DIR$`,
        ),
      );
      expect((refused as Error).message).not.toContain('\n');

      // No store configured at all (each session's own directory) is another store too.
      await expect(start({})).rejects.toThrow(/this one's is the directory each session names \(no KEEL_STORE_URL or KEEL_STORE_DIR\)/);
      await expect(start({ KEEL_STORE_URL: 's3://bucket/keel' })).rejects.toThrow(/^keel worker: KEEL_STORE_URL: the conversation store "s3" is not supported/);

      // The same store passes the probe and finds the first worker's marker. (The probe
      // alone: one process cannot register two workers on one task queue.)
      const same = await probeStore({ connection: env.nativeConnection, namespace: env.namespace, taskQueue, env: { KEEL_STORE_DIR: dirA } });
      expect(same.line).toBe(`keel worker: conversation store: local ${dirA} (id ${idA})`);
      expect(same.identity).toMatch(new RegExp(`^keel-store=${idA} \\d+@\\S+$`));
    } finally {
      first.worker.shutdown();
      await running;
    }
  });

  it('a wrong worker that ran first and stopped does not make the right ones refuse while Temporal still lists it', async () => {
    const taskQueue = uniqueTaskQueue('fleet-stale');
    const [wrong, right] = [path.join(root, 'stale-wrong'), path.join(root, 'stale-right')];
    const lines: string[] = [];
    const start = (dir: string) =>
      createKeelWorker({ connection: env.nativeConnection, namespace: env.namespace, taskQueue, workflowBundle, workflowsOnCallingThread: true, env: { ANTHROPIC_API_KEY: 'unused', KEEL_STORE_DIR: dir }, log: (l) => lines.push(l) });
    const first = await start(wrong);
    const idWrong = (await storeIdentity(wrong)).id;
    const running = first.run();
    const listed = () =>
      waitUntil(
        async () => (await env.client.workflowService.describeTaskQueue({ namespace: env.namespace, taskQueue: { name: taskQueue }, taskQueueType: 2 })).pollers ?? [],
        (pollers) => pollers.some((p) => (p.identity ?? '').startsWith(`keel-store=${idWrong} `)),
        30_000,
        'the wrong worker listed',
      );
    await listed();
    first.worker.shutdown();
    await running;
    // Stopped, yet still listed (for minutes): before, this alone refused every right worker.
    await listed();
    const second = await start(right);
    const idRight = (await storeIdentity(right)).id;
    expect(lines.at(-1)).toBe(
      `keel worker: conversation store: local ${right} (id ${idRight}, marked by this worker: the first of its fleet); ignored 1 stopped worker Temporal still lists on task queue "${taskQueue}" (store ${idWrong}; none polled again)`,
    );
    const runningRight = second.run();
    second.worker.shutdown();
    await runningRight;
  });

  it("a worker whose store is another refuses a session's store calls, naming both stores", async () => {
    const [dirA, dirB] = [path.join(root, 'session-a'), path.join(root, 'session-b')];
    const idA = (await storeIdentity(dirA)).id;
    // Worker B marked its own store when it started (worker/store-probe.ts).
    const idB = (await storeIdentity(dirB)).id;
    const onB = createStoreActivities({ KEEL_STORE_DIR: dirB });
    const error = await onB.storeSegment({ store: '/ignored', parent: null, items: [{ role: 'user', content: 'hi' }], storeId: idA }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ApplicationFailure);
    const failure = error as ApplicationFailure;
    expect(failure.type).toBe('ConversationStoreError');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.details?.[0]).toMatchObject({ storeCause: 'foreign', repairable: false, failureClass: 'fatal' });
    expect(failure.message).toMatch(new RegExp(`^the conversation store in local directory ${dirB}: this worker's store is ${idB}, but the session's is ${idA}`));
    // Nothing was written on the wrong store.
    expect(await fs.readdir(dirB)).toEqual(['keel-store.json']);
  });

  it("a goal's task agents check the goal's store like a session: another store behind the worker refuses their model calls", async () => {
    const g = await goalEnv(env, workflowBundle, {
      rules: [
        // The planner takes a moment: the test swaps the store's marker meanwhile.
        { match: planner(), reply: { ...plan([task('code', 'Code', 'Write a.txt.')]), delayMs: 1_500 } },
        ...writesFile('code', 'a.txt', 'a\n'),
      ],
    });
    await g.run(async () => {
      const run = await g.start({ goal: 'a.txt', autoApprove: true, maxTaskAttempts: 1, maxPlanAttempts: 1 });
      const marker = path.join(g.workspace, '.keel', 'store', 'keel-store.json');
      // The goal's setup marked its store and recorded the id; now the worker sees another store.
      const recorded = await waitUntil(
        () => fs.readFile(marker, 'utf8').then((t) => (JSON.parse(t) as { id: string }).id, () => ''),
        (id) => id !== '',
        30_000,
        "the goal's store marker",
      );
      await fs.writeFile(marker, JSON.stringify({ keel: 'conversation-store', id: 'another-store', createdAt: new Date().toISOString() }));
      clearIdentityCache();
      // The agent's first model call is refused (not repaired, not retried as a model fault): the task fails, saying why.
      const log = await waitUntil(() => run.log(), (entries) => entries.some((e) => e.kind === 'agent.failed'), 45_000, 'the agent to fail');
      const failed = log.find((e) => e.kind === 'agent.failed') as { error?: string } | undefined;
      expect(failed?.error).toMatch(new RegExp(`^the agent's turn ended failed: ConversationStoreError: the conversation store in local directory \\S+: this worker's store is another-store, but the session's is ${recorded}`));
      // The agent's call never reached the model: nothing was written to another store's conversation.
      expect(g.standin.requests.filter((r) => JSON.stringify(r.body).includes('task [code]'))).toEqual([]);
      await expect(fs.stat(path.join(g.workspace, 'a.txt'))).rejects.toThrow();
    });
  });
});
