// AG-UI: an off-the-shelf AG-UI client (@ag-ui/client's HttpAgent, the newest) drives a Keel
// session through `keel serve`: its message starts a turn; the tool call that waits for
// approval ends the run with an interrupt outcome; the next run answers it in `resume` and
// the same turn finishes with the reply and its usage; a reloaded thread gets the session's
// messages and state as snapshots; two clients sending the same text each get their own turn.
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildResumeArray, HttpAgent } from '@ag-ui/client';
import { EventType, type BaseEvent } from '@ag-ui/core';
import { Client, type WorkflowClientInterceptor } from '@temporalio/client';
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { describe, expect, it } from 'vitest';
import { KeelClient } from '../../client/keel-client';
import { startServer } from '../../server/main';
import { loadScenario, type ScenarioInput } from '../../standin/scenario';
import { TEST_TOKEN } from '../fixtures/serve-process';
import { sessionEnv } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const { env, workflowBundle } = useTemporal();

describe('AG-UI', () => {
  it('an @ag-ui/client HttpAgent runs a turn through an approval interrupt and resume, reloads the thread from snapshots, and runs are matched by message id', async () => {
    const s = await sessionEnv(env, workflowBundle, await loadScenario(path.join(root, 'test/fixtures/scenarios/session-demo.yaml')), { ANTHROPIC_API_KEY: 'sk-ant-demo' }, { ownWorkflowThread: true });
    const keel = await KeelClient.connect({ client: env.client, taskQueue: s.taskQueue });
    const server = await startServer({ keel, port: 0, workspace: s.workspace, env: { KEEL_API_TOKEN: TEST_TOKEN, KEEL_API_APPROVER: 'ag-ui user' } });
    let id = '';
    const threadIds: string[] = [];
    try {
      await s.run(async () => {
        const session = await keel.startSession({ workspace: s.workspace, policy: { mode: 'ask' } });
        id = session.id;
        const newAgent = () => new HttpAgent({ url: `${server.url}/api/sessions/${id}/ag-ui`, headers: { Authorization: `Bearer ${TEST_TOKEN}` }, threadId: id });
        const agent = newAgent();
        agent.addMessage({ id: 'u1', role: 'user', content: 'please write a note' });

        // Run 1: the write waits for approval, so the run ends with an interrupt.
        const first: BaseEvent[] = [];
        await agent.runAgent({ runId: 'run-1' }, { onEvent: ({ event }) => void first.push(event) });
        const types1 = first.map((e) => e.type);
        expect(types1[0]).toBe(EventType.RUN_STARTED);
        expect(types1).toEqual(expect.arrayContaining([EventType.TEXT_MESSAGE_START, EventType.TEXT_MESSAGE_CONTENT, EventType.TEXT_MESSAGE_END, EventType.TOOL_CALL_START, EventType.TOOL_CALL_ARGS, EventType.TOOL_CALL_END]));
        const end1 = first.at(-1) as unknown as { type: string; outcome: { type: string; interrupts: Array<{ id: string; reason: string; toolCallId?: string }> } };
        expect(end1.type).toBe(EventType.RUN_FINISHED);
        expect(end1.outcome.type).toBe('interrupt');
        expect(end1.outcome.interrupts).toEqual([expect.objectContaining({ id: 'approval:toolu_demo_write', reason: 'tool_approval', toolCallId: 'toolu_demo_write' })]);
        expect(agent.pendingInterrupts.map((i) => i.id)).toEqual(['approval:toolu_demo_write']);
        expect((await session.state()).pendingApprovals.map((p) => p.callId)).toEqual(['toolu_demo_write']);

        // Run 2: resume answers the interrupt; the same turn finishes, with its usage.
        const second: BaseEvent[] = [];
        const result = await agent.runAgent(
          { runId: 'run-2', resume: buildResumeArray(agent.pendingInterrupts, { 'approval:toolu_demo_write': { status: 'resolved', payload: { approved: true } } }) },
          { onEvent: ({ event }) => void second.push(event) },
        );
        const types2 = second.map((e) => e.type);
        expect(types2[0]).toBe(EventType.RUN_STARTED);
        expect(types2).toContain(EventType.TOOL_CALL_RESULT);
        const end2 = second.at(-1) as unknown as { type: string; outcome: { type: string }; usage: Array<{ inputTokens: number; outputTokens: number }>; result: { outcome: string; turnId: string } };
        expect(end2.type).toBe(EventType.RUN_FINISHED);
        expect(end2.outcome.type).toBe('success');
        expect(end2.result.outcome).toBe('completed');
        expect(end2.usage[0]!.outputTokens).toBeGreaterThan(0);
        expect(agent.pendingInterrupts).toEqual([]);
        const texts = result.newMessages.flatMap((m) => (m.role === 'assistant' && typeof m.content === 'string' ? [m.content] : []));
        expect(texts.join('\n')).toContain('Done. The tool said what it said');
        expect(await fs.readFile(path.join(s.workspace, 'NOTE.md'), 'utf8')).toBe('Written by Keel.\n');

        // A reloaded thread: an empty client gets the conversation and the state as snapshots.
        const reloaded = newAgent();
        const third: BaseEvent[] = [];
        await reloaded.runAgent({ runId: 'run-3' }, { onEvent: ({ event }) => void third.push(event) });
        expect(third.map((e) => e.type)).toEqual([EventType.RUN_STARTED, EventType.MESSAGES_SNAPSHOT, EventType.STATE_SNAPSHOT, EventType.RUN_FINISHED]);
        const roles = reloaded.messages.map((m) => m.role);
        expect(roles).toEqual(['user', 'assistant', 'tool', 'assistant']);
        expect(reloaded.messages[0]!.content).toBe('please write a note');
        const call = reloaded.messages[1]!.role === 'assistant' ? reloaded.messages[1]!.toolCalls?.[0] : undefined;
        expect(call?.function.name).toBe('write_file');
        expect(JSON.parse(call!.function.arguments)).toEqual({ path: 'NOTE.md', content: 'Written by Keel.\n' });
        expect(reloaded.messages[3]!.content).toContain('Done. The tool said what it said');
        expect((reloaded.state as { status: string }).status).toBe('active');

        // Two clients send the same text at once: each run follows its own message's turn.
        const a = newAgent();
        const b = newAgent();
        a.addMessage({ id: 'same-a', role: 'user', content: 'hello' });
        b.addMessage({ id: 'same-b', role: 'user', content: 'hello' });
        const ends: Record<string, { result: { turnId: string } }> = {};
        await Promise.all(
          [a, b].map((x, i) =>
            x.runAgent({ runId: `run-same-${i}` }, { onEvent: ({ event }) => void (event.type === EventType.RUN_FINISHED && (ends[i] = event as unknown as { result: { turnId: string } })) }),
          ),
        );
        expect(ends[0]!.result.turnId).toBeTruthy();
        expect(ends[1]!.result.turnId).toBeTruthy();
        expect(ends[0]!.result.turnId).not.toBe(ends[1]!.result.turnId);
        const finished = await Promise.all(['same-a', 'same-b'].map((m) => session.turnOf(m)));
        expect(finished.map((f) => f.turnId)).toEqual([ends[0]!.result.turnId, ends[1]!.result.turnId]);

        // One endpoint, many threads (CopilotKit): each thread runs its own session.
        const urlSessionMessages = (await session.transcript(0, 500)).messages.length;
        const threads = ['thread-x', 'thread-y'];
        const threadAgents = threads.map((threadId) => new HttpAgent({ url: `${server.url}/api/ag-ui`, headers: { Authorization: `Bearer ${TEST_TOKEN}` }, threadId }));
        threadAgents.forEach((x, i) => x.addMessage({ id: `m-${threads[i]}`, role: 'user', content: 'hello' }));
        const threadEnds = await Promise.all(threadAgents.map(async (x, i) => {
          const events: BaseEvent[] = [];
          await x.runAgent({ runId: `run-${threads[i]}` }, { onEvent: ({ event }) => void events.push(event) });
          return events.at(-1)!.type;
        }));
        expect(threadEnds).toEqual([EventType.RUN_FINISHED, EventType.RUN_FINISHED]);
        for (const threadId of threads) {
          const own = keel.getSession(`agui-${threadId}`);
          threadIds.push(own.id);
          const users = (await own.transcript(0, 100)).messages.filter((m) => m.role === 'user');
          expect(users.map((m) => JSON.stringify(m.content)), threadId).toEqual([JSON.stringify(users[0]!.content)]);
          expect(JSON.stringify(users[0]!.content)).toContain('hello');
        }
        // The session of the URL got none of them.
        expect((await session.transcript(0, 500)).messages).toHaveLength(urlSessionMessages);
      });
    } finally {
      await server.close();
      for (const x of [id, ...threadIds].filter(Boolean)) await env.client.workflow.getHandle(x).terminate('test over').catch(() => undefined);
    }
  }, 180_000);

  it("a message's run asks the workflow once before its message goes, reads the offset beside the describe, and its first text comes while the model still streams", async () => {
    // A reply of ~24 chunks, 60 ms apart: ~1.5 s of streaming.
    const reply = 'Streaming slowly so that the first words show well before the last ones are written by the model.';
    const scenario: ScenarioInput = { name: 'slow', rules: [{ name: 'slow', match: {}, reply: { content: [{ type: 'text', text: reply }], delayMs: 60, chunkSize: 4 } }] };
    const s = await sessionEnv(env, workflowBundle, scenario, {}, { ownWorkflowThread: true });
    // Every call the API server makes to the workflow, with when it went and when it came back.
    const calls: Array<{ name: string; start: number; end: number }> = [];
    const timed = async <T>(name: string, next: () => Promise<T>): Promise<T> => {
      const call = { name, start: performance.now(), end: Number.POSITIVE_INFINITY };
      calls.push(call);
      try {
        return await next();
      } finally {
        call.end = performance.now();
      }
    };
    const recording: WorkflowClientInterceptor = {
      describe: (input, next) => timed('describe', () => next(input)),
      query: (input, next) => timed(`query ${input.queryType}`, () => next(input)),
      startUpdate: (input, next) => timed(`update ${input.updateName}`, () => next(input)),
    };
    const client = new Client({ connection: env.client.connection, namespace: env.namespace, interceptors: { workflow: [recording] } });
    const keel = await KeelClient.connect({ client, taskQueue: s.taskQueue });
    const server = await startServer({ keel, port: 0, workspace: s.workspace, env: { KEEL_API_TOKEN: TEST_TOKEN } });
    let id = '';
    try {
      await s.run(async () => {
        const session = await keel.startSession({ workspace: s.workspace });
        id = session.id;
        calls.length = 0;
        const response = await fetch(`${server.url}/api/sessions/${id}/ag-ui`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json', accept: 'text/event-stream' },
          body: JSON.stringify({ threadId: id, runId: 'run-slow', messages: [{ id: 'slow-1', role: 'user', content: 'tell me slowly' }], tools: [], context: [], state: {} }),
        });
        expect(response.status).toBe(200);
        const events: Array<{ type: EventType; delta?: string }> = [];
        let firstText: { delta: string; modelStillWriting: boolean } | null = null;
        const reader = response.body!.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader();
        for (;;) {
          const next = await reader.read();
          if (next.done) break;
          const event = JSON.parse(next.value.data) as { type: EventType; delta?: string };
          events.push(event);
          if (event.type === EventType.TEXT_MESSAGE_CONTENT && firstText === null) {
            // Is the stand-in still writing the reply (its record's outcome is set when the reply is whole)?
            const request = s.standin.requests.find((r) => r.facts?.lastUserText.includes('tell me slowly'));
            firstText = { delta: event.delta ?? '', modelStillWriting: request?.outcome === 'pending' };
          }
          if (event.type === EventType.RUN_FINISHED || event.type === EventType.RUN_ERROR) break;
        }
        expect(events.at(-1)?.type).toBe(EventType.RUN_FINISHED);
        const text = events.flatMap((e) => (e.type === EventType.TEXT_MESSAGE_CONTENT ? [e.delta ?? ''] : [])).join('');
        expect(text).toBe(reply);
        // The first text came while the model still wrote: a part of the reply, live.
        expect(firstText).not.toBeNull();
        expect(firstText!.delta.length).toBeLessThan(reply.length);
        expect(firstText!.modelStillWriting).toBe(true);

        // Before the message's update: the describe (what the id is) and the stream's offset,
        // side by side; no read of the state (a plain message needs none). Then the update.
        const update = calls.find((c) => c.name === 'update userMessage');
        expect(update).toBeDefined();
        const before = calls.filter((c) => c.start < update!.start);
        expect(before.map((c) => c.name).sort()).toEqual(['describe', 'query __temporal_workflow_stream_offset']);
        const [a, b] = before;
        expect(Math.max(a!.start, b!.start)).toBeLessThan(Math.min(a!.end, b!.end));
        expect(update!.start).toBeGreaterThanOrEqual(Math.max(a!.end, b!.end));
      });
    } finally {
      await server.close();
      if (id) await env.client.workflow.getHandle(id).terminate('test over').catch(() => undefined);
    }
  }, 60_000);
});
