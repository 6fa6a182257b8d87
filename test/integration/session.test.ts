// The session workflow end to end: a real worker with the real activities, the model
// stand-in, real tools in a temp workspace. Tool use, approvals (approve, session scope,
// deny, timeout), ask_user, and events in the wrong state.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { conversationProblems, type Message } from '../../machines/index';
import {
  answerSignal,
  approveUpdate,
  closeUpdate,
  denySignal,
  pendingApprovalsQuery,
  resumeSignal,
  resumeUpdate,
  transcriptQuery,
  userMessageUpdate,
} from '../../workflows/definitions';
import { recordHistory, say, sessionEnv, use } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';
import { compiledWorker } from '../fixtures/compiled-cli';

const here = path.dirname(fileURLToPath(import.meta.url));

const { env, workflowBundle } = useTemporal();

const rejection = async (promise: Promise<unknown>): Promise<string> => {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(WorkflowUpdateFailedError);
  return String((error as WorkflowUpdateFailedError).cause?.message);
};

describe('session workflow', () => {
  it('holds a conversation with tool use: message → model → tool → model → reply, with events and queries', async () => {
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        { match: { lastUserContains: 'what does hello.txt say', hasToolResults: false }, reply: use('read_file', { path: 'hello.txt' }, undefined, 'Let me look.') },
        { match: { hasToolResults: true, lastUserContains: 'hello world' }, reply: say('It says hello world.') },
      ],
    });
    await fs.writeFile(path.join(s.workspace, 'hello.txt'), 'hello world\n');
    await s.run(async () => {
      const run = await s.start();
      const accepted = await run.handle.executeUpdate(userMessageUpdate, { args: [{ text: 'what does hello.txt say?' }] });
      expect(accepted.messageId).toMatch(/^msg-/);
      await run.events.waitFor((e) => e.some((x) => x.kind === 'session.turn_finished'));
      const state = await run.waitForState((v) => v.status === 'active' && v.session.turns === 1);
      expect(state.usage.usage.outputTokens).toBeGreaterThan(0);
      expect(state.tools).toContain('run_command');

      const kinds = (await run.log()).map((e) => e.kind);
      for (const kind of ['session.created', 'session.activated', 'session.message_received', 'turn.started', 'turn.tool_calls_received', 'tool.call', 'tool.result', 'turn.tools_finished', 'turn.completed', 'session.turn_finished']) {
        expect(kinds, kind).toContain(kind);
      }
      // seq is gap-free from 0
      expect((await run.log()).map((e) => e.seq)).toEqual((await run.log()).map((_, i) => i));
      const completed = (await run.log()).find((e) => e.kind === 'turn.completed');
      expect(completed).toMatchObject({ finalOutput: 'It says hello world.' });

      const transcript = await run.handle.query(transcriptQuery, { from: 0, limit: 10 });
      expect(transcript.total).toBe(4);
      expect(transcript.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
      expect(JSON.stringify(transcript.messages[2])).toContain('hello world');
      // The second model call carried the whole conversation, reassembled from the store.
      const second = s.standin.requests.at(-1)!.body as { messages: Message[] };
      expect(second.messages).toHaveLength(3);
      expect(conversationProblems(second.messages)).toEqual([]);

      const desc = await run.handle.describe();
      expect(desc.searchAttributes.KeelStatus).toEqual(['active']);
      expect(desc.searchAttributes.KeelKind).toEqual(['session']);
      expect(desc.searchAttributes.KeelWorkspace).toEqual([s.workspace]);

      await run.handle.executeUpdate(closeUpdate, { args: [{ reason: 'done' }] });
      const result = await run.handle.result();
      expect(result).toMatchObject({ outcome: 'closed', reason: 'done', stats: { turns: 1, toolCalls: { success: 1 } } });
      await recordHistory(run.handle, 'tool-use-and-close');
    });
  });

  it('asks for approval; a wrong call id is rejected; approve for the session remembers; deny and timeout become results', async () => {
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        { match: { lastUserContains: 'write it', hasToolResults: false }, reply: use('write_file', { path: 'notes/a.txt', content: 'one' }, 'toolu_write_1') },
        { match: { lastUserContains: 'write again', hasToolResults: false }, reply: use('write_file', { path: 'notes/a.txt', content: 'two' }, 'toolu_write_2') },
        { match: { lastUserContains: 'clean up', hasToolResults: false }, reply: use('run_command', { command: 'rm -rf notes' }, 'toolu_rm') },
        { match: { lastUserContains: 'touch it', hasToolResults: false }, reply: use('run_command', { command: 'touch late.txt' }, 'toolu_touch') },
        { match: { hasToolResults: true }, reply: say('Done.') },
      ],
    });
    await s.run(async () => {
      const run = await s.start({ policy: { mode: 'ask' }, approvalTimeoutMs: 2_000 });
      await run.handle.executeUpdate(userMessageUpdate, { args: ['write it'] });
      const waiting = await run.waitForState((v) => v.pendingApprovals.length === 1);
      expect(waiting.pendingApprovals[0]).toMatchObject({ callId: 'toolu_write_1', name: 'write_file' });
      expect(await run.handle.query(pendingApprovalsQuery)).toHaveLength(1);
      expect((await run.log()).map((e) => e.kind)).toContain('tool.approval_requested');
      const desc = await run.handle.describe();
      expect(desc.searchAttributes.KeelPendingApprovals).toEqual([1]);

      expect(await rejection(run.handle.executeUpdate(approveUpdate, { args: [{ callId: 'toolu_nope' }] }))).toContain(
        'unknown call id toolu_nope: waiting for approval: toolu_write_1',
      );
      // A rule the human gives is remembered; without one only the exact call would be.
      const approved = await run.handle.executeUpdate(approveUpdate, { args: [{ callId: 'toolu_write_1', scope: 'session', rule: 'write_file(notes/a.txt)' }] });
      expect(approved.sessionRule).toBe('write_file(notes/a.txt)');
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 1);
      expect(await fs.readFile(path.join(s.workspace, 'notes/a.txt'), 'utf8')).toBe('one');
      expect((await run.handle.describe()).searchAttributes.KeelPendingApprovals).toEqual([0]);

      // The same file again: approved for the session, so it runs without asking.
      await run.handle.executeUpdate(userMessageUpdate, { args: ['write again'] });
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 2);
      expect(await fs.readFile(path.join(s.workspace, 'notes/a.txt'), 'utf8')).toBe('two');
      expect((await run.log()).filter((e) => e.kind === 'tool.approval_requested')).toHaveLength(1);

      // Deny by signal: the model reads why.
      await run.handle.executeUpdate(userMessageUpdate, { args: ['clean up'] });
      await run.waitForState((v) => v.pendingApprovals.length === 1);
      await run.handle.signal(denySignal, { callId: 'toolu_rm', reason: 'keep the notes' });
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 3);
      expect(await fs.readFile(path.join(s.workspace, 'notes/a.txt'), 'utf8')).toBe('two');
      const denied = s.standin.requests.at(-1)!.body as { messages: Message[] };
      expect(JSON.stringify(denied.messages.at(-1))).toContain('Denied: keep the notes');

      // Nobody answers: the approval timer gives the model a result that says so.
      await run.handle.executeUpdate(userMessageUpdate, { args: ['touch it'] });
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 4, 20_000);
      const timedOut = s.standin.requests.at(-1)!.body as { messages: Message[] };
      expect(JSON.stringify(timedOut.messages.at(-1))).toContain('No one approved this tool call in time');
      await expect(fs.stat(path.join(s.workspace, 'late.txt'))).rejects.toThrow();
      const state = await run.state();
      expect(state.usage.toolCalls).toMatchObject({ success: 2, denied: 1, timeout: 1 });
      await recordHistory(run.handle, 'approvals');
      expect(conversationProblems([...timedOut.messages, { role: 'assistant', content: [{ type: 'text', text: 'Done.' }] }, { role: 'user', content: [{ type: 'text', text: 'x' }] }])).toEqual([]);
    });
  });

  it('ask_user waits for an answer; a wrong-state signal is recorded and a wrong-state update rejected with its reason', async () => {
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        { match: { lastUserContains: 'pick a colour', hasToolResults: false }, reply: use('ask_user', { question: 'Which colour?' }, 'toolu_ask') },
        { match: { hasToolResults: true, lastUserContains: 'teal' }, reply: say('Teal it is.') },
      ],
    });
    await s.run(async () => {
      const run = await s.start();
      await run.waitForState((v) => v.status === 'active');
      // Nothing is suspended or paused: resume is refused, with the machine's reason.
      expect(await rejection(run.handle.executeUpdate(resumeUpdate, { args: [{}] }))).toContain("session: 'resume' is not accepted in state active (no transition on 'resume' from active)");
      await run.handle.signal(resumeSignal, {});
      const recorded = await run.events.waitFor((e) => e.some((x) => x.kind === 'event.rejected'));
      expect(recorded.find((x) => x.kind === 'event.rejected')).toMatchObject({ source: 'signal resume', machine: 'session', state: 'active', event: 'resume' });

      await run.handle.executeUpdate(userMessageUpdate, { args: ['pick a colour'] });
      const asking = await run.waitForState((v) => v.status === 'awaiting_input');
      expect(asking.question).toEqual({ callId: 'toolu_ask', question: 'Which colour?' });
      expect((await run.log()).map((e) => e.kind)).toContain('session.input_requested');
      await run.handle.signal(answerSignal, { text: 'teal' });
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 1);
      expect((await run.log()).find((e) => e.kind === 'turn.completed')).toMatchObject({ finalOutput: 'Teal it is.' });

      await run.handle.executeUpdate(closeUpdate, { args: [{}] });
      expect(await run.handle.result()).toMatchObject({ outcome: 'closed', stats: { turns: 1 } });
      await recordHistory(run.handle, 'ask-user-and-rejections');
      // A closed session takes no more messages.
      await expect(run.handle.executeUpdate(userMessageUpdate, { args: ['hello?'] })).rejects.toThrow(/completed|not found/i);
    });
  });

  it('offers the tools of the worker\'s MCP servers when started with mcp: true', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-mcp-config-'));
    const config = path.join(dir, 'mcp.json');
    const repoRoot = path.resolve(here, '../..');
    const [node, serverScript] = await compiledWorker('mcp-server');
    const server = { command: node, args: [serverScript], sandbox: { read: [repoRoot] } };
    await fs.writeFile(config, JSON.stringify({ servers: { test: server } }));
    const s = await sessionEnv(
      env,
      workflowBundle,
      {
        rules: [
          { match: { lastUserContains: 'echo ping', hasToolResults: false }, reply: use('mcp__test__echo', { text: 'ping' }, 'toolu_mcp') },
          { match: { hasToolResults: true, lastUserContains: 'echo: ping' }, reply: say('The server said ping back.') },
        ],
      },
      { KEEL_MCP_CONFIG: config },
    );
    try {
      await s.run(async () => {
        const run = await s.start({ mcp: true, policy: { mode: 'full-auto', allow: ['mcp__test__*'] } });
        await run.handle.executeUpdate(userMessageUpdate, { args: ['echo ping'] });
        const state = await run.waitForState((v) => v.status === 'active' && v.session.turns === 1, 30_000);
        expect(state.tools).toContain('mcp__test__echo');
        expect((await run.log()).find((e) => e.kind === 'tool.result')).toMatchObject({ callId: 'toolu_mcp', status: 'success', output: 'echo: ping' });
        expect(s.standin.requests[0]!.body).toMatchObject({ tools: expect.arrayContaining([expect.objectContaining({ name: 'mcp__test__echo' })]) as unknown });
      });
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});
