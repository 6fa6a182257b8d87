// What one more Keel worker costs a process that makes many (a test fork makes one or more
// per test): `npx tsx bench/worker-create.ts [workers=6]`. In one process, against one dev
// server and one bundle, it creates workers one after another, alternating a worker whose
// workflows get a thread of their own (the SDK's default) with one whose workflows run on the
// calling thread (createKeelWorker's workflowsOnCallingThread), runs each until it polls,
// and stops it. CPU is the whole process's (every thread), so a worker thread's start is in
// it. Writes bench/results/worker-create.json.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, NativeConnection, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { startDevServer } from '../worker/dev-server';
import { createKeelWorker, KEEL_BUNDLE_OPTIONS } from '../worker/worker';
import { percentile } from './suite/stats';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const count = Number(process.argv[2] ?? 6);
const quiet = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };

type Mode = 'own thread' | 'calling thread';
interface Sample {
  mode: Mode;
  createMs: number;
  cpuMs: number;
}

async function once(connection: NativeConnection, workflowBundle: WorkflowBundleWithSourceMap, mode: Mode, i: number): Promise<Sample> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const keel = await createKeelWorker({
    connection,
    namespace: 'default',
    taskQueue: `worker-create-${i}`,
    workflowBundle,
    workflowsOnCallingThread: mode === 'calling thread',
    env: { ANTHROPIC_API_KEY: 'unused' },
    log: () => {},
  });
  const createMs = performance.now() - started;
  const running = keel.run();
  // Until it polls: the state a test waits for before it starts a workflow.
  while (keel.worker.getState() !== 'RUNNING') await new Promise((r) => setTimeout(r, 10));
  keel.worker.shutdown();
  await running;
  const used = process.cpuUsage(cpu);
  return { mode, createMs, cpuMs: (used.user + used.system) / 1000 };
}

const server = await startDevServer({ port: 0 });
try {
  const connection = await NativeConnection.connect({ address: server.address });
  const workflowBundle = await bundleWorkflowCode({ ...KEEL_BUNDLE_OPTIONS, logger: quiet });
  const samples: Sample[] = [];
  // Alternating, so that a machine's drift falls on both; the first of each is its warm-up.
  for (let i = 0; i < 2 * (count + 1); i++) samples.push(await once(connection, workflowBundle, i % 2 === 0 ? 'own thread' : 'calling thread', i));
  await connection.close();
  const summary = Object.fromEntries(
    (['own thread', 'calling thread'] as const).map((mode) => {
      const counted = samples.filter((s) => s.mode === mode).slice(1);
      const of = (k: 'cpuMs' | 'createMs') => counted.map((s) => s[k]).sort((a, b) => a - b);
      return [mode, { workers: counted.length, cpuMsP50: percentile(of('cpuMs'), 50), cpuMsMin: of('cpuMs')[0], cpuMsMax: of('cpuMs').at(-1), createMsP50: percentile(of('createMs'), 50) }];
    }),
  );
  for (const [mode, s] of Object.entries(summary)) {
    console.log(`${mode.padEnd(14)} ${s.workers} workers: CPU per worker p50 ${s.cpuMsP50.toFixed(0)} ms (${s.cpuMsMin!.toFixed(0)}-${s.cpuMsMax!.toFixed(0)}), create p50 ${s.createMsP50.toFixed(0)} ms`);
  }
  const out = path.join(root, 'bench/results/worker-create.json');
  await fs.writeFile(out, `${JSON.stringify({ when: new Date().toISOString(), loadAverage: os.loadavg(), node: process.version, summary, samples }, null, 2)}\n`);
  console.log(`wrote ${path.relative(root, out)}`);
} finally {
  await server.stop();
}
