// `npm run bench:heap [P] [--snapshot]`: what one cached (parked) Keel session holds in the
// worker's V8 heap, and why. One process, run with --expose-gc, a dev server, the stand-in.
//
// 1. Keel sessions: a worker made as createKeelWorker makes it, but in debug mode, so the
//    workflows run on this thread and this thread's heap is theirs (normally a worker
//    thread holds them, out of process.memoryUsage()'s sight). P sessions each run one
//    1-step turn and stay open, all cached; the heap after a full GC, before and after,
//    divided by P. With --snapshot, a heap snapshot is written for DevTools.
// 2. What any workflow costs: the same parked count of a workflow that only waits for a
//    signal (`parked-bare.ts`): the SDK's own share of a cached session. What Keel's modules
//    cost each workflow is `npm run bench:heap:modules`: nothing, since every bundle Keel
//    builds shares all of them (worker/workflow-bundle.ts PRELOADED_WORKFLOW_MODULES).
//
// Writes bench/results/heap.{json,md}.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeHeapSnapshot } from 'node:v8';
import { Client } from '@temporalio/client';
import { ClosableConnection } from '../../client/grpc-retry';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../../activities/index';
import { ACTIVITY_WORKER_OPTIONS } from '../../activities/tools/index';
import { KeelClient } from '../../client/keel-client';
import { startStandin } from '../../standin/server';
import { startDevServer } from '../../worker/dev-server';
import { keelWorkflowSinks } from '../../worker/telemetry';
import { payloadConverterPath, workflowsPath } from '../../worker/worker';
import { PRELOADED_WORKFLOW_MODULES } from '../../worker/workflow-bundle';
import { BENCH_MODEL, benchScenario, turnText, writeStepFiles } from '../suite/script';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('bench/heap needs node --expose-gc (npm run bench:heap)');
const parked = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 200);
const snapshot = process.argv.includes('--snapshot');
const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');

interface Memory {
  heapMiB: number;
  rssMiB: number;
}

function memory(): Memory {
  gc!();
  gc!();
  const m = process.memoryUsage();
  return { heapMiB: m.heapUsed / 2 ** 20, rssMiB: m.rss / 2 ** 20 };
}

const perKiB = (before: Memory, after: Memory, n: number, k: keyof Memory) => Math.round(((after[k] - before[k]) * 1024) / n);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-heap-'));
  const workspace = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-heap-ws-')));
  await writeStepFiles(workspace, [1]);
  const server = await startDevServer({ port: 0, dbFile: path.join(dir, 'temporal.db'), readyTimeoutMs: 180_000 });
  const standin = await startStandin({ scenario: benchScenario([1]) });
  const env = { ...process.env, ANTHROPIC_API_KEY: 'sk-ant-bench', ANTHROPIC_BASE_URL: standin.url };
  const nativeConnection = await NativeConnection.connect({ address: server.address });
  const connection = await ClosableConnection.connect({ address: server.address });
  const client = new Client({ connection, namespace: server.namespace });
  const result: Record<string, unknown> = { when: new Date().toISOString(), parked, node: process.version };
  try {
    // 1. Keel sessions.
    const taskQueue = 'bench-heap';
    const keelActivities = createActivities(env);
    const worker = await Worker.create({
      connection: nativeConnection,
      namespace: server.namespace,
      taskQueue,
      workflowsPath,
      // As createKeelWorker bundles from source: Keel's pure modules once per worker.
      bundlerOptions: { preloadModules: [...PRELOADED_WORKFLOW_MODULES] },
      dataConverter: { payloadConverterPath },
      activities: keelActivities.activities,
      maxCachedWorkflows: parked + 50,
      debugMode: true,
      sinks: keelWorkflowSinks(null),
      ...ACTIVITY_WORKER_OPTIONS,
    });
    const running = worker.run().finally(() => keelActivities.close());
    const keel = await KeelClient.connect({ client, taskQueue });
    // One session first, so the bundle, the context and the caches are warm.
    const warm = await keel.startSession({ id: 'heap-warm', workspace, model: BENCH_MODEL });
    await warm.send(turnText(1, 'warm'));
    const before = memory();
    const handles = [warm];
    for (let i = 0; i < parked; i += 25) {
      const batch = Array.from({ length: Math.min(25, parked - i) }, async (_, j) => {
        const h = await keel.startSession({ id: `heap-${i + j}`, workspace, model: BENCH_MODEL });
        const outcome = await h.send(turnText(1, `p${i + j}`));
        if (outcome.outcome !== 'completed') throw new Error(`turn ended ${outcome.outcome}`);
        return h;
      });
      handles.push(...(await Promise.all(batch)));
    }
    const after = memory();
    const sessions = {
      cached: worker.getStatus().numCachedWorkflows,
      heapKiBPerSession: perKiB(before, after, parked, 'heapMiB'),
      rssKiBPerSession: perKiB(before, after, parked, 'rssMiB'),
      heapMiB: [before.heapMiB, after.heapMiB],
      snapshot: snapshot ? writeHeapSnapshot(path.join(os.tmpdir(), `keel-heap-${Date.now()}.heapsnapshot`)) : null,
    };
    result.sessions = sessions;
    console.log(`Keel sessions: ${parked} parked (${sessions.cached} cached): ${sessions.heapKiBPerSession} KiB of V8 heap each, ${sessions.rssKiBPerSession} KiB of RSS each${sessions.snapshot ? `; snapshot ${sessions.snapshot}` : ''}`);
    await Promise.all(handles.map((h) => h.close('heap probe over')));
    worker.shutdown();
    await running;

    // 2. What any workflow costs.
    const tq = 'bench-heap-bare';
    const w = await Worker.create({ connection: nativeConnection, namespace: server.namespace, taskQueue: tq, workflowsPath: path.join(here, 'parked-bare.ts'), bundlerOptions: { preloadModules: [...PRELOADED_WORKFLOW_MODULES] }, dataConverter: { payloadConverterPath }, debugMode: true, maxCachedWorkflows: parked + 50 });
    const run = w.run();
    const started = [await client.workflow.start('parkedWorkflow', { taskQueue: tq, workflowId: 'heap-bare-warm' })];
    while (w.getStatus().numCachedWorkflows < 1) await sleep(50);
    const b = memory();
    for (let i = 0; i < parked; i++) started.push(await client.workflow.start('parkedWorkflow', { taskQueue: tq, workflowId: `heap-bare-${i}` }));
    while (w.getStatus().numCachedWorkflows < parked + 1) await sleep(100);
    await sleep(500);
    result.bareKiBPerWorkflow = perKiB(b, memory(), parked, 'heapMiB');
    console.log(`a parked workflow that only waits: ${result.bareKiBPerWorkflow as number} KiB of V8 heap each`);
    await Promise.all(started.map((h) => h.signal('done')));
    w.shutdown();
    await run;
  } finally {
    await connection.close();
    await nativeConnection.close();
    await standin.close();
    await server.stop();
    await fs.rm(dir, { recursive: true, force: true });
    await fs.rm(workspace, { recursive: true, force: true });
  }
  await fs.mkdir(path.join(root, 'bench/results'), { recursive: true });
  await fs.writeFile(path.join(root, 'bench/results/heap.json'), `${JSON.stringify(result, null, 2)}\n`);
  const s = result.sessions as { cached: number; heapKiBPerSession: number; rssKiBPerSession: number };
  const md = [
    `# What a cached Keel session holds (\`npm run bench:heap -- ${parked}\`, ${result.when as string})`,
    '',
    "| what is parked (all cached; bundled as the worker bundles: Keel's workflow code evaluated once per worker) | V8 heap per workflow |",
    '|---|---|',
    `| a Keel session after one 1-step turn | ${s.heapKiBPerSession} KiB (worker RSS ${s.rssKiBPerSession} KiB) |`,
    `| a workflow that only waits for a signal (the SDK's own share) | ${result.bareKiBPerWorkflow as number} KiB |`,
    '',
  ].join('\n');
  await fs.writeFile(path.join(root, 'bench/results/heap.md'), md);
  console.log(md);
}

await main();
process.exit(0);
