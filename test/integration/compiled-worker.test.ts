// The compiled worker (`npm run build`, then `npm start` = node dist/worker/main.js) as a
// deploy meets it: two of them on one task queue, real processes, the real dev server and
// the model stand-in. SIGTERM to the one in the middle of a model call: it stops polling,
// the call finishes inside the grace time, and the model was called once. SIGTERM in the
// middle of a long command: after the grace time the command is killed, and the call ends
// as worker_lost for the model to decide — it is not run again behind the model's back.
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { startStandin } from '../../standin/server';
import { generateKeyLine } from '../../shared/encryption';
import { transcriptQuery, userMessageSignal } from '../../workflows/definitions';
import { sessionWorkflow } from '../../workflows/session';
import { buildCompiledWorker, type CompiledBuild, type CompiledWorker } from '../fixtures/compiled-worker';
import { makeWorkspace, say, use } from '../fixtures/session-harness';
import { uniqueTaskQueue } from '../helpers/temporal';
import { hostPidWith } from '../unit/tools/context';
import { useTemporal } from '../fixtures/use-temporal';

const KEY = 'sk-ant-test-compiled-1';

const { env } = useTemporal({ workflows: false });
let build: CompiledBuild;

beforeAll(async () => {
  build = await buildCompiledWorker();
  // The build is ~12 s of CPU, shared with the rest of the run: at load 40 it passed 180 s.
}, 600_000);
afterAll(async () => {
});

const startCompiledWorker = (taskQueue: string, extra: NodeJS.ProcessEnv) =>
  build.start({ TEMPORAL_ADDRESS: env.address, TEMPORAL_NAMESPACE: env.namespace, KEEL_TASK_QUEUE: taskQueue, ANTHROPIC_API_KEY: KEY, ...extra });

/** The packages a compiled file and the files it imports statically load as it starts (esbuild's `import … from "x"` lines; `import("x")` is not one). */
async function staticPackages(entry: string): Promise<Set<string>> {
  const line = /^(?:import|export)\s[^;]*?\sfrom\s*"([^"]+)";|^import\s*"([^"]+)";/gm;
  const seen = new Set<string>();
  const packages = new Set<string>();
  const walk = async (file: string): Promise<void> => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const m of (await fs.readFile(file, 'utf8')).matchAll(line)) {
      const specifier = m[1] ?? m[2]!;
      if (specifier.startsWith('.')) await walk(path.resolve(path.dirname(file), specifier));
      else packages.add(specifier);
    }
  };
  await walk(entry);
  return packages;
}

describe('compiled worker', () => {
  it('loads the OpenTelemetry SDK, the MCP client and pg only when it uses them, not at every start', async () => {
    const loaded = await staticPackages(path.join(build.dir, 'worker/main.js'));
    // The walk sees what a start loads: Temporal's SDK, and the OpenTelemetry API every worker calls.
    expect(loaded).toContain('@temporalio/worker');
    expect(loaded).toContain('@opentelemetry/api');
    const optional = [...loaded].filter((p) => /^@opentelemetry\/(?!api$)|^@modelcontextprotocol\/sdk\/client\/|^pg$/.test(p));
    expect(optional, 'docs/performance.md, "what a worker loads before it polls"').toEqual([]);
  });

  it('runs from dist/ with the prebuilt bundle, and a SIGTERM mid model call does not pay for the call twice', async () => {
    // About 4 s of streaming: long enough to stop the worker in the middle of it.
    const reply = 'This answer streams slowly, so the worker is stopped while the model call is running. '.repeat(2);
    const standin = await startStandin({ scenario: { rules: [{ match: { lastUserContains: 'slow please' }, reply: { ...say(reply), delayMs: 90, chunkSize: 4 } }] } });
    const workspace = await makeWorkspace();
    const taskQueue = uniqueTaskQueue('compiled');
    // A grace time far longer than the call, so that "waited for the call" and "waited out the grace" stay apart on a busy machine.
    const workerEnv = { ANTHROPIC_BASE_URL: standin.url, KEEL_SHUTDOWN_GRACE: '90s' };
    const first = await startCompiledWorker(taskQueue, workerEnv);
    let second: CompiledWorker | undefined;
    try {
      const handle = await env.client.workflow.start(sessionWorkflow, { taskQueue, workflowId: `${taskQueue}-s`, args: [{ workspace, policy: { mode: 'full-auto' } }] });
      await handle.signal(userMessageSignal, { text: 'slow please' });
      await expect.poll(() => standin.requests.length, { timeout: 30_000, interval: 50 }).toBe(1);
      second = await startCompiledWorker(taskQueue, workerEnv);
      const stoppedAt = Date.now();
      first.child.kill('SIGTERM');
      expect(await first.exited).toBe(0);
      // It waited for the running call (seconds), not the whole grace time (90 s).
      expect(Date.now() - stoppedAt).toBeLessThan(80_000);
      await expect
        .poll(async () => (await handle.query(transcriptQuery)).messages.at(-1), { timeout: 30_000 })
        .toMatchObject({ role: 'assistant', content: [{ type: 'text', text: reply }] });
      expect(standin.requests).toHaveLength(1);
      await handle.terminate('test over');
    } finally {
      first.child.kill('SIGKILL');
      second?.child.kill('SIGKILL');
      await standin.close();
    }
  }, 300_000);

  it('cancels a command still running when the grace time ends, and ends the call as worker_lost instead of running it again', async () => {
    // Runs until it is killed (its own timeout is half an hour): the SIGTERM (after the second
    // worker has started, slow on a loaded machine) lands mid-way, however slow the machine.
    const command = 'echo start >> log.txt; sleep 1790.4173; echo end >> log.txt';
    onTestFinished(() => {
      const pid = hostPidWith('1790.4173');
      if (pid > 0) process.kill(pid, 'SIGKILL');
    });
    const standin = await startStandin({
      scenario: {
        rules: [
          { match: { lastUserContains: 'long command', hasToolResults: false }, reply: use('run_command', { command, timeout_seconds: 1800 }) },
          { match: { hasToolResults: true }, reply: say('The command finished.') },
        ],
      },
    });
    const workspace = await makeWorkspace();
    const taskQueue = uniqueTaskQueue('compiled-cmd');
    const workerEnv = { ANTHROPIC_BASE_URL: standin.url, KEEL_SHUTDOWN_GRACE: '1s' };
    const first = await startCompiledWorker(taskQueue, workerEnv);
    let second: CompiledWorker | undefined;
    try {
      const handle = await env.client.workflow.start(sessionWorkflow, { taskQueue, workflowId: `${taskQueue}-s`, args: [{ workspace, policy: { mode: 'full-auto' } }] });
      await handle.signal(userMessageSignal, { text: 'run the long command' });
      const log = () => fs.readFile(path.join(workspace, 'log.txt'), 'utf8').catch(() => '');
      await expect.poll(log, { timeout: 30_000, interval: 50 }).toBe('start\n');
      second = await startCompiledWorker(taskQueue, workerEnv);
      const stoppedAt = Date.now();
      first.child.kill('SIGTERM');
      expect(await first.exited).toBe(0);
      // Grace (1 s) plus the kill (seconds on a busy machine): not the half hour the command wanted.
      expect(Date.now() - stoppedAt).toBeLessThan(60_000);
      await expect
        .poll(async () => (await handle.query(transcriptQuery)).messages.at(-1), { timeout: 30_000 })
        .toMatchObject({ role: 'assistant', content: [{ type: 'text', text: 'The command finished.' }] });
      // Killed once mid-way on the stopped worker, and never started again (before: `start start end`).
      expect(await log()).toBe('start\n');
      const messages = (await handle.query(transcriptQuery)).messages;
      const results = messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).filter((b) => b.type === 'tool_result');
      expect(results).toHaveLength(1);
      expect(results[0]).toMatchObject({ is_error: true });
      expect(JSON.stringify(results[0])).toMatch(/run_command was interrupted: the worker running it stopped responding \(its worker shut down\)\. The command may have run partly/);
      await handle.terminate('test over');
    } finally {
      first.child.kill('SIGKILL');
      second?.child.kill('SIGKILL');
      await standin.close();
      await fs.rm(workspace, { recursive: true, force: true });
    }
  }, 300_000);

  it('with encryption keys runs the bundle whose workflow failures are encoded: a refused start leaves no readable message in history', async () => {
    const taskQueue = uniqueTaskQueue('compiled-keys');
    const worker = await startCompiledWorker(taskQueue, { KEEL_ENCRYPTION_KEYS: generateKeyLine('k1') });
    try {
      // Start input without the keys: the workflow fails (InvalidStartInput), raised inside the bundle.
      const handle = await env.client.workflow.start(sessionWorkflow, { taskQueue, workflowId: `${taskQueue}-plain`, args: [{ workspace: '/tmp', policy: { mode: 'full-auto' } }] });
      await expect(handle.result()).rejects.toThrow();
      const failed = (await handle.fetchHistory()).events?.find((e) => e.workflowExecutionFailedEventAttributes)?.workflowExecutionFailedEventAttributes;
      // The default bundle would write "…not encrypted with a Keel key…" here in the clear.
      expect(failed?.failure?.message).toBe('Encoded failure');
    } finally {
      worker.child.kill('SIGKILL');
    }
  });
});
