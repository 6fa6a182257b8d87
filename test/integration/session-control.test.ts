// Human control of a running session: interrupt during model streaming and during
// run_command, steer mid-turn, a message queued while a turn runs, pause and resume.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { WorkflowStreamClient } from '@temporalio/workflow-streams/client';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { ModelStreamEvent } from '../../activities/llm';
import { conversationProblems, type Message } from '../../machines/index';
import { workflowsPath } from '../../worker/worker';
import { interruptUpdate, MODEL_TOPIC, pauseSignal, resumeUpdate, steerUpdate, transcriptQuery, userMessageSignal, userMessageUpdate } from '../../workflows/definitions';
import { recordHistory, say, sessionEnv, use, waitUntil } from '../fixtures/session-harness';
import { closeTestEnv } from '../fixtures/worker-teardown';
import { bundle, connectTestEnv, type TemporalTestEnv } from '../helpers/temporal';
import { hostPidWith, isAlive } from '../unit/tools/context';

let env: TemporalTestEnv;
let workflowBundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  env = await connectTestEnv();
  workflowBundle = await bundle(workflowsPath);
});

afterAll(async () => {
  await closeTestEnv(env);
});

const lastRequest = (s: { standin: { requests: { body: unknown }[] } }) => s.standin.requests.at(-1)!.body as { messages: Message[] };
/** A valid request ends with a user message; check what was sent plus the reply. */
const validSent = (messages: Message[]) => conversationProblems(messages);

describe('session control', () => {
  it('interrupt during model streaming closes the connection, keeps the partial text, and the next turn is valid', async () => {
    const long = 'Durable workflows survive crashes because every step is recorded. '.repeat(40);
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        // Held after 20 pieces until the interrupt closes it: it cannot end first, however slow the machine.
        { match: { lastUserContains: 'tell me a long story' }, reply: say(long, { delayMs: 40, chunkSize: 6 }), fault: { kind: 'hang' as const, afterEvents: 22 } },
        { match: { lastUserContains: 'short one' }, reply: say('Short.') },
      ],
    });
    await s.run(async () => {
      const run = await s.start();
      const deltas: ModelStreamEvent[] = [];
      const topic = WorkflowStreamClient.create(env.client, run.handle.workflowId).topic<ModelStreamEvent>(MODEL_TOPIC);
      void (async () => {
        try {
          for await (const item of topic.subscribe(0, { pollCooldown: 20 })) deltas.push(item.data);
        } catch {
          /* workflow gone */
        }
      })();
      await run.handle.executeUpdate(userMessageUpdate, { args: ['tell me a long story'] });
      await waitUntil(async () => deltas.filter((d) => d.kind === 'delta').length, (n) => n >= 1, 60_000, 'streamed deltas');
      await run.handle.executeUpdate(interruptUpdate, { args: [{ reason: 'enough' }] });
      const after = await run.waitForState((v) => v.status === 'active' && v.session.turns === 1);
      expect(after.usage.toolCalls.cancelled).toBe(0);
      // The stand-in saw the client go away before the answer was complete.
      await waitUntil(async () => s.standin.requests[0]!, (r) => r.closedAt !== null, 30_000, 'connection closed');
      expect(s.standin.requests[0]!.clientClosedEarly).toBe(true);

      const interrupted = (await run.log()).find((e) => e.kind === 'turn.interrupted');
      expect(interrupted).toMatchObject({ reason: 'enough' });
      const partial = (interrupted as { partialOutput: string | null }).partialOutput;
      expect(partial).toBeTruthy();
      expect(long.startsWith(partial!)).toBe(true);
      expect(partial!.length).toBeLessThan(long.length);

      await run.handle.executeUpdate(userMessageUpdate, { args: ['a short one please'] });
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 2);
      const sent = lastRequest(s).messages;
      expect(validSent(sent)).toEqual([]);
      expect(sent).toHaveLength(3);
      expect(JSON.stringify(sent[1])).toContain(partial!.slice(0, 40));
      await recordHistory(run.handle, 'interrupt-model');
    });
  });

  it('interrupt during run_command stops the process, writes a cancelled result, and the next turn is valid', async () => {
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        // Runs until it is killed (its own timeout is half an hour): the interrupt cannot come after it ended.
        { match: { lastUserContains: 'run the slow thing', hasToolResults: false }, reply: use('run_command', { command: 'echo started > pid.txt; sleep 1790.4172', timeout_seconds: 1800 }, 'toolu_slow') },
        { match: { lastUserContains: 'are you there' }, reply: say('Yes.') },
      ],
    });
    // Should the interrupt not kill it, the test does.
    onTestFinished(() => {
      const pid = hostPidWith('1790.4172');
      if (pid > 0) process.kill(pid, 'SIGKILL');
    });
    await s.run(async () => {
      const run = await s.start();
      await run.handle.executeUpdate(userMessageUpdate, { args: ['run the slow thing'] });
      // The command runs in the sandbox's own pid namespace: its host pid is found by its marker.
      const pid = await waitUntil(async () => hostPidWith('1790.4172'), (p) => p > 0, 60_000, 'the command to start');
      expect(isAlive(pid)).toBe(true);
      await run.handle.executeUpdate(interruptUpdate, { args: [{}] });
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 1);
      await waitUntil(async () => isAlive(pid), (alive) => !alive, 30_000, 'the process to be gone');
      const result = (await run.log()).find((e) => e.kind === 'tool.result');
      expect(result).toMatchObject({ callId: 'toolu_slow', status: 'cancelled' });

      await run.handle.executeUpdate(userMessageUpdate, { args: ['are you there?'] });
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 2);
      const sent = lastRequest(s).messages;
      expect(validSent(sent)).toEqual([]);
      expect(JSON.stringify(sent[2])).toContain('Cancelled');
      await recordHistory(run.handle, 'interrupt-command');
    });
  });

  it('steer mid-turn reaches the model at the next boundary; a message sent during a turn is processed after it', async () => {
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        // The command waits for the test's `release` file: the steer and the message come while it runs, however slow the machine.
        { match: { lastUserContains: 'count files', hasToolResults: false }, reply: use('run_command', { command: 'while [ ! -e release ]; do sleep 0.1; done; ls | wc -l' }, 'toolu_count') },
        { match: { hasToolResults: true, lastUserContains: 'in French' }, reply: say('Il y a des fichiers.') },
        { match: { lastUserContains: 'second question' }, reply: say('Second answer.') },
      ],
    });
    await s.run(async () => {
      const run = await s.start();
      await run.handle.executeUpdate(userMessageUpdate, { args: ['count files'] });
      await run.waitForState((v) => v.turn?.status === 'executing_tools');
      await run.handle.executeUpdate(steerUpdate, { args: [{ text: 'answer in French' }] });
      const queued = await run.handle.executeUpdate(userMessageUpdate, { args: ['second question'] });
      expect(queued).toMatchObject({ queued: true, queueLength: 1 });
      await fs.writeFile(path.join(s.workspace, 'release'), '');
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 2, 30_000);
      const kinds = (await run.log()).map((e) => e.kind);
      expect(kinds).toContain('turn.steer_queued');
      expect(kinds).toContain('turn.steer_applied');
      const outputs = (await run.log()).filter((e) => e.kind === 'turn.completed').map((e) => (e as { finalOutput: string }).finalOutput);
      expect(outputs).toEqual(['Il y a des fichiers.', 'Second answer.']);
      // The second message's turn started only after the first finished.
      const order = (await run.log()).filter((e) => e.kind === 'turn.started' || e.kind === 'session.turn_finished').map((e) => e.kind);
      expect(order).toEqual(['turn.started', 'session.turn_finished', 'turn.started', 'session.turn_finished']);
      const transcript = await run.handle.query(transcriptQuery, { from: 0 });
      expect(validSent(transcript.messages.concat([{ role: 'user', content: [{ type: 'text', text: 'next' }] }]))).toEqual([]);
      await recordHistory(run.handle, 'steer-and-queue');
    });
  });

  it('pause while a turn runs: the turn finishes, new messages wait; resume processes them', async () => {
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        // Waits for the test's `release` file: the pause comes while the turn runs, however slow the machine.
        { match: { lastUserContains: 'slow job', hasToolResults: false }, reply: use('run_command', { command: 'while [ ! -e release ]; do sleep 0.1; done' }, 'toolu_sleep') },
        { match: { hasToolResults: true }, reply: say('Slow job done.') },
        { match: { lastUserContains: 'after the pause' }, reply: say('Resumed.') },
      ],
    });
    await s.run(async () => {
      const run = await s.start();
      await run.handle.executeUpdate(userMessageUpdate, { args: ['slow job'] });
      await run.waitForState((v) => v.turn?.status === 'executing_tools');
      await run.handle.signal(pauseSignal, { reason: 'lunch' });
      await run.handle.signal(userMessageSignal, { text: 'after the pause' });
      // Both signals are in the history before the command can end.
      await fs.writeFile(path.join(s.workspace, 'release'), '');
      const paused = await run.waitForState((v) => v.status === 'paused' && v.session.turns === 1 && v.turn === null);
      expect(paused.reason).toBe('lunch');
      expect(paused.queueLength).toBe(1);
      await new Promise((r) => setTimeout(r, 300));
      expect(s.standin.requests).toHaveLength(2);
      expect((await run.handle.describe()).searchAttributes.KeelStatus).toEqual(['paused']);

      await run.handle.executeUpdate(resumeUpdate, { args: [{}] });
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 2);
      expect((await run.log()).map((e) => e.kind)).toContain('session.resumed');
      expect((await run.log()).filter((e) => e.kind === 'turn.completed').map((e) => (e as { finalOutput: string }).finalOutput)).toEqual([
        'Slow job done.',
        'Resumed.',
      ]);
      await recordHistory(run.handle, 'pause-resume');
    });
  });
});
