// The compiled worker (`npm run build`, then `npm start` = node dist/worker/main.js) as a
// deploy meets it: two of them on one task queue, real processes, the real dev server and
// the model stand-in. SIGTERM to the one in the middle of a model call: it stops polling,
// the call finishes inside the grace time, and the model was called once. SIGTERM in the
// middle of a long command: after the grace time the command is killed and the call runs
// again on the other worker.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandin } from '../../standin/server';
import { transcriptQuery, userMessageSignal } from '../../workflows/definitions';
import { sessionWorkflow } from '../../workflows/session';
import { makeWorkspace, say, use } from '../fixtures/session-harness';
import { connectTestEnv, type TemporalTestEnv, uniqueTaskQueue } from '../helpers/temporal';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const KEY = 'sk-ant-test-compiled-1';

let env: TemporalTestEnv;
// Its own build, so test files running side by side do not replace each other's.
const outDir = path.join(root, '.keel', `dist-test-${process.pid}`);

beforeAll(async () => {
  env = await connectTestEnv();
  await promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/build.ts', outDir], { cwd: root });
}, 180_000);
afterAll(async () => {
  await fs.rm(outDir, { recursive: true, force: true });
  await env?.close();
});

interface Running {
  child: ChildProcess;
  output: string[];
  exited: Promise<number | null>;
}

/** `npm start` without npm: plain node on the compiled code (no tsx loader). */
function startCompiledWorker(taskQueue: string, extra: NodeJS.ProcessEnv): Promise<Running> {
  const child = spawn(process.execPath, [path.join(outDir, 'worker/main.js')], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH, HOME: process.env.HOME, TEMPORAL_ADDRESS: env.address, TEMPORAL_NAMESPACE: env.namespace, KEEL_TASK_QUEUE: taskQueue, ANTHROPIC_API_KEY: KEY, ...extra },
  });
  const output: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output.push(chunk.toString());
      if (output.join('').includes('keel worker: polling')) resolve({ child, output, exited });
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then((code) => reject(new Error(`worker exited with ${code}:\n${output.join('')}`)));
  });
}

describe('compiled worker', () => {
  it('runs from dist/ with the prebuilt bundle, and a SIGTERM mid model call does not pay for the call twice', async () => {
    // About 4 s of streaming: long enough to stop the worker in the middle of it.
    const reply = 'This answer streams slowly, so the worker is stopped while the model call is running. '.repeat(2);
    const standin = await startStandin({ scenario: { rules: [{ match: { lastUserContains: 'slow please' }, reply: { ...say(reply), delayMs: 90, chunkSize: 4 } }] } });
    const workspace = await makeWorkspace();
    const taskQueue = uniqueTaskQueue('compiled');
    const workerEnv = { ANTHROPIC_BASE_URL: standin.url, KEEL_SHUTDOWN_GRACE: '20s' };
    const first = await startCompiledWorker(taskQueue, workerEnv);
    let second: Running | undefined;
    try {
      const handle = await env.client.workflow.start(sessionWorkflow, { taskQueue, workflowId: `${taskQueue}-s`, args: [{ workspace, policy: { mode: 'full-auto' } }] });
      await handle.signal(userMessageSignal, { text: 'slow please' });
      await expect.poll(() => standin.requests.length, { timeout: 30_000, interval: 50 }).toBe(1);
      second = await startCompiledWorker(taskQueue, workerEnv);
      const stoppedAt = Date.now();
      first.child.kill('SIGTERM');
      expect(await first.exited).toBe(0);
      // It waited for the running call (seconds), not the whole grace time.
      expect(Date.now() - stoppedAt).toBeLessThan(15_000);
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
  });

  it('cancels a command still running when the grace time ends, and runs it again on the other worker', async () => {
    const command = 'echo start >> log.txt; sleep 6; echo end >> log.txt';
    const standin = await startStandin({
      scenario: {
        rules: [
          { match: { lastUserContains: 'long command', hasToolResults: false }, reply: use('run_command', { command }) },
          { match: { hasToolResults: true }, reply: say('The command finished.') },
        ],
      },
    });
    const workspace = await makeWorkspace();
    const taskQueue = uniqueTaskQueue('compiled-cmd');
    const workerEnv = { ANTHROPIC_BASE_URL: standin.url, KEEL_SHUTDOWN_GRACE: '1s' };
    const first = await startCompiledWorker(taskQueue, workerEnv);
    let second: Running | undefined;
    try {
      const handle = await env.client.workflow.start(sessionWorkflow, { taskQueue, workflowId: `${taskQueue}-s`, args: [{ workspace, policy: { mode: 'full-auto' } }] });
      await handle.signal(userMessageSignal, { text: 'run the long command' });
      const log = () => fs.readFile(path.join(workspace, 'log.txt'), 'utf8').catch(() => '');
      await expect.poll(log, { timeout: 30_000, interval: 50 }).toBe('start\n');
      second = await startCompiledWorker(taskQueue, workerEnv);
      const stoppedAt = Date.now();
      first.child.kill('SIGTERM');
      expect(await first.exited).toBe(0);
      // Grace (1 s) plus the kill: not the 6 s the command wanted.
      expect(Date.now() - stoppedAt).toBeLessThan(5_500);
      await expect
        .poll(async () => (await handle.query(transcriptQuery)).messages.at(-1), { timeout: 30_000 })
        .toMatchObject({ role: 'assistant', content: [{ type: 'text', text: 'The command finished.' }] });
      // Killed once mid-way on the stopped worker, then run whole on the other one.
      expect(await log()).toBe('start\nstart\nend\n');
      const messages = (await handle.query(transcriptQuery)).messages;
      const results = messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).filter((b) => b.type === 'tool_result');
      expect(results).toHaveLength(1);
      expect(results[0]).toMatchObject({ is_error: false });
      await handle.terminate('test over');
    } finally {
      first.child.kill('SIGKILL');
      second?.child.kill('SIGKILL');
      await standin.close();
      await fs.rm(workspace, { recursive: true, force: true });
    }
  });
});
