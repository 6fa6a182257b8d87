// The things `npm run bench` compares, each with its own worker process (so its CPU and
// memory are its own) on its own task queue of the one dev server: the floor, Keel, and
// the peers. A session is started, sent turns, and closed the same way for all of them;
// only Keel's sessions go through Keel's client (SessionHandle.send, streaming on).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import { builtinTools, modelToolSpec } from '../../activities/tools/definitions';
import { KeelClient } from '../../client/keel-client';
import type { SessionHandle } from '../../client/session-handle';
import { postgresBinDir } from '../../test/helpers/postgres';
import { BENCH_MODEL, FINAL_TEXT } from './script';
import { cpuMs, loadAverage } from './proc';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export const VARIANTS = ['floor', 'floor-local', 'keel', 'keel-pg', 'ai-sdk', 'ai-sdk-stream', 'openai-agents'] as const;
export type VariantName = (typeof VARIANTS)[number];

/** Keel's variants: the same worker and client, with the local conversation store or PostgreSQL's. */
export const isKeel = (name: VariantName): name is 'keel' | 'keel-pg' => name === 'keel' || name === 'keel-pg';

export const LABELS: Record<VariantName, string> = {
  floor: 'floor: bare Temporal workflow, same activities',
  'floor-local': 'floor with read_file and list_dir as local activities (as Keel runs them)',
  keel: 'Keel, SessionHandle.send() (streaming on)',
  'keel-pg': 'Keel as `keel`, its conversation store in PostgreSQL (KEEL_STORE_URL)',
  'ai-sdk': '@temporalio/ai-sdk generateText',
  'ai-sdk-stream': '@temporalio/ai-sdk streamText + streamingTopic',
  'openai-agents': '@temporalio/openai-agents TemporalOpenAIRunner',
};

interface WorkerSpec {
  file: string;
  /** Workflow type a session runs (the peers' and the floor's; Keel's is sessionWorkflow). */
  workflowType: string;
  /** Why it cannot run, when it cannot (checked before anything starts). */
  unavailable?: () => string | null;
}

const peersInstalled = () =>
  existsSync(path.join(root, 'bench/peers/node_modules/@temporalio/ai-sdk')) ? null : 'the peers are not installed: run `npm run bench:peers:install` (bench/peers/package.json)';

const SPECS: Record<VariantName, WorkerSpec> = {
  floor: { file: 'bench/floor/worker.ts', workflowType: 'floorSession' },
  'floor-local': { file: 'bench/floor/worker.ts', workflowType: 'floorSession' },
  keel: { file: 'worker/main.ts', workflowType: 'sessionWorkflow' },
  'keel-pg': { file: 'worker/main.ts', workflowType: 'sessionWorkflow', unavailable: () => (postgresBinDir() === null ? 'PostgreSQL is not installed (Debian package postgresql)' : null) },
  'ai-sdk': { file: 'bench/peers/ai-sdk-worker.ts', workflowType: 'aiSdkSession', unavailable: peersInstalled },
  'ai-sdk-stream': { file: 'bench/peers/ai-sdk-worker.ts', workflowType: 'aiSdkStreamSession', unavailable: peersInstalled },
  'openai-agents': { file: 'bench/peers/openai-agents-worker.ts', workflowType: 'openAiAgentsSession', unavailable: peersInstalled },
};

export function unavailable(name: VariantName): string | null {
  return SPECS[name].unavailable?.() ?? null;
}

export interface WorkerEnv {
  address: string;
  namespace: string;
  anthropicUrl: string;
  openaiUrl: string;
}

/** A starting worker that has used no CPU for this long is stuck (or starved beyond use). */
const START_STALL_MS = 120_000;
const START_CHECK_MS = 5_000;

export class VariantWorker {
  private child: ChildProcess | null = null;
  readonly taskQueue: string;

  constructor(
    readonly name: VariantName,
    private readonly env: WorkerEnv,
    private readonly extraEnv: Record<string, string> = {},
    /** Told every ~30 s while the worker is still starting. */
    private readonly onProgress?: (line: string) => void,
  ) {
    this.taskQueue = `bench-${name}`;
  }

  get pid(): number {
    if (!this.child?.pid) throw new Error(`${this.name} worker is not running`);
    return this.child.pid;
  }

  get workflowType(): string {
    return SPECS[this.name].workflowType;
  }

  async start(): Promise<void> {
    const spec = SPECS[this.name];
    // BENCH_WORKER_NODE_ARGS: node flags for the variants' workers, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`
    // (a profile per thread: the main thread runs the activities, a worker thread the workflows).
    const nodeArgs = (process.env.BENCH_WORKER_NODE_ARGS ?? '').split(' ').filter((arg) => arg.length > 0);
    const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', spec.file], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        TEMPORAL_ADDRESS: this.env.address,
        TEMPORAL_NAMESPACE: this.env.namespace,
        KEEL_TASK_QUEUE: this.taskQueue,
        BENCH_TASK_QUEUE: this.taskQueue,
        ANTHROPIC_API_KEY: 'sk-ant-bench',
        ANTHROPIC_BASE_URL: this.env.anthropicUrl,
        OPENAI_API_KEY: 'sk-bench',
        OPENAI_BASE_URL: `${this.env.openaiUrl}/v1`,
        BENCH_MODEL,
        ...this.extraEnv,
      },
    });
    this.child = child;
    let out = '';
    await new Promise<void>((resolve, reject) => {
      // Waited for as long as the worker makes progress (its CPU time grows: bundling, loading),
      // not a fixed time: on a loaded machine a start took over 180 s and lost a whole run. It
      // fails only when the process has done nothing for START_STALL_MS, or exits.
      const since = Date.now();
      let lastCpu = -1;
      let lastProgress = Date.now();
      const timer = setInterval(() => {
        const cpu = child.pid ? cpuMs(child.pid) : 0;
        if (cpu > lastCpu) {
          lastCpu = cpu;
          lastProgress = Date.now();
        }
        const waited = Math.round((Date.now() - since) / 1000);
        if (Date.now() - lastProgress > START_STALL_MS) {
          clearInterval(timer);
          reject(new Error(`${this.name} worker did nothing for ${START_STALL_MS / 1000} s while starting (${waited} s in all):\n${out}`));
        } else if (waited > 0 && waited % 30 < START_CHECK_MS / 1000) {
          this.onProgress?.(`${this.name} worker still starting: ${waited} s, ${(cpu / 1000).toFixed(1)} s of CPU, load ${loadAverage()[0]}`);
        }
      }, START_CHECK_MS);
      const onData = (chunk: Buffer) => {
        out += chunk.toString();
        if (out.length > 20_000) out = out.slice(-20_000);
        if (/(keel|bench) worker: polling/.test(out)) {
          clearInterval(timer);
          resolve();
        }
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      child.once('exit', (code) => {
        clearInterval(timer);
        reject(new Error(`${this.name} worker exited ${code}:\n${out}`));
      });
    });
    child.removeAllListeners('exit');
    // Keep draining its output (a full pipe would stall the worker); show errors.
    child.stdout.removeAllListeners('data');
    child.stderr.removeAllListeners('data');
    child.stdout.resume();
    child.stderr.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      if (/error|fail/i.test(text)) process.stderr.write(`[${this.name} worker] ${text.slice(0, 2000)}`);
    });
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
    this.child = null;
  }
}

/** One conversation, however the variant runs it. */
export interface BenchSession {
  readonly id: string;
  /** Sends a message; resolves when its turn has finished, with the final text. */
  turn(text: string): Promise<string>;
  close(): Promise<void>;
  /** Keel only: the handle, for stream latency. */
  readonly keel?: SessionHandle;
}

export async function startSession(client: Client, worker: VariantWorker, id: string, workspace: string, keelOptions: Record<string, unknown> = {}, floorOptions: { stream?: boolean } = {}): Promise<BenchSession> {
  if (isKeel(worker.name)) {
    const keel = await KeelClient.connect({ client, taskQueue: worker.taskQueue });
    const handle = await keel.startSession({ id, workspace, model: BENCH_MODEL, ...keelOptions });
    return {
      id,
      keel: handle,
      async turn(text) {
        const outcome = await handle.send(text);
        if (outcome.outcome !== 'completed') throw new Error(`keel turn ended ${outcome.outcome}`);
        return outcome.output ?? '';
      },
      async close() {
        await handle.close('bench over');
        await handle.result();
      },
    };
  }
  // The floor offers the model Keel's built-in tools, as Keel does; the peers define read_file.
  // floor-local runs the tools Keel runs locally (their definitions say `local`) the same way.
  const isFloor = worker.name === 'floor' || worker.name === 'floor-local';
  const localTools = worker.name === 'floor-local' ? { localTools: builtinTools.filter((t) => t.local).map((t) => t.name) } : {};
  const floor = isFloor ? { tools: builtinTools.map(modelToolSpec), ...localTools, ...floorOptions } : {};
  const handle = await client.workflow.start(worker.workflowType, { taskQueue: worker.taskQueue, workflowId: id, args: [{ workspace, model: BENCH_MODEL, ...floor }] });
  return {
    id,
    async turn(text) {
      return handle.executeUpdate<string, [string]>('turn', { args: [text] });
    },
    async close() {
      await handle.signal('close');
      await handle.result();
    },
  };
}

export function checkFinal(variant: VariantName, output: string): void {
  if (!output.includes(FINAL_TEXT)) throw new Error(`${variant}: the turn ended without the script's final text: ${JSON.stringify(output.slice(0, 200))}`);
}
