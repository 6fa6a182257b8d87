// AG-UI frontend tools: a tool the client declares in RunAgentInput.tools is offered to the
// model in that message's turn (and only there); when the model calls it, the run ends after
// TOOL_CALL_START/ARGS/END with the call left to the client; the client runs it and sends the
// result as a `tool` message on the next run, and the same turn goes on with it.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { HttpAgent } from '@ag-ui/client';
import { EventType, type BaseEvent, type Tool } from '@ag-ui/core';
import { describe, expect, it } from 'vitest';
import { KeelClient } from '../../client/keel-client';
import { startServer } from '../../server/main';
import { loadScenario } from '../../standin/scenario';
import { TEST_TOKEN } from '../fixtures/serve-process';
import { sessionEnv } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const { env, workflowBundle } = useTemporal();

const getLocation: Tool = {
  name: 'get_location',
  description: "The user's location, from the browser",
  parameters: { type: 'object', properties: { precision: { type: 'string', enum: ['city', 'exact'] } }, required: ['precision'] },
};

type Finished = { type: string; outcome: { type: string }; result: { outcome: string; turnId: string; callIds?: string[] } };

describe('AG-UI frontend tools', () => {
  it('a tool the client declares is called by the model, run by the client, and its result carries the same turn on', async () => {
    const s = await sessionEnv(env, workflowBundle, await loadScenario(path.join(root, 'test/fixtures/scenarios/frontend-tools.yaml')), { ANTHROPIC_API_KEY: 'sk-ant-demo' }, { ownWorkflowThread: true });
    const keel = await KeelClient.connect({ client: env.client, taskQueue: s.taskQueue });
    const server = await startServer({ keel, port: 0, workspace: s.workspace, env: { KEEL_API_TOKEN: TEST_TOKEN, KEEL_API_APPROVER: 'ag-ui user' } });
    let id = '';
    try {
      await s.run(async () => {
        const session = await keel.startSession({ workspace: s.workspace, policy: { mode: 'ask' } });
        id = session.id;
        const agent = new HttpAgent({ url: `${server.url}/api/sessions/${id}/ag-ui`, headers: { Authorization: `Bearer ${TEST_TOKEN}` }, threadId: id });
        agent.addMessage({ id: 'u1', role: 'user', content: 'where am I?' });

        // Run 1: the model calls the client's tool; the run ends with the call for the client.
        const first: BaseEvent[] = [];
        await agent.runAgent({ runId: 'run-1', tools: [getLocation] }, { onEvent: ({ event }) => void first.push(event) });
        const types1 = first.map((e) => e.type);
        expect(types1.filter((t) => t.startsWith('TOOL_CALL'))).toEqual([EventType.TOOL_CALL_START, EventType.TOOL_CALL_ARGS, EventType.TOOL_CALL_END]);
        const start = first.find((e) => e.type === EventType.TOOL_CALL_START) as unknown as { toolCallId: string; toolCallName: string };
        expect(start).toMatchObject({ toolCallId: 'toolu_client_loc', toolCallName: 'get_location' });
        const end1 = first.at(-1) as unknown as Finished;
        expect(end1.type).toBe(EventType.RUN_FINISHED);
        expect(end1.outcome.type).toBe('success');
        expect(end1.result).toMatchObject({ outcome: 'client_tools', callIds: ['toolu_client_loc'] });
        // The turn waits for the client, and says for which call.
        const waiting = await session.state();
        expect(waiting.turn?.turnId).toBe(end1.result.turnId);
        expect(waiting.clientToolCalls).toEqual([{ callId: 'toolu_client_loc', name: 'get_location', input: { precision: 'city' } }]);
        // The client holds the call as AG-UI puts it: an assistant message with the tool call.
        const call = agent.messages.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []) : [])).find((c) => c.id === 'toolu_client_loc');
        expect(call?.function.name).toBe('get_location');
        expect(JSON.parse(call!.function.arguments)).toEqual({ precision: 'city' });

        // The client runs the tool and sends the result on the next run: the same turn goes on.
        agent.addMessage({ id: 'r1', role: 'tool', toolCallId: 'toolu_client_loc', content: 'Lisbon, Portugal' });
        const second: BaseEvent[] = [];
        const result = await agent.runAgent({ runId: 'run-2', tools: [getLocation] }, { onEvent: ({ event }) => void second.push(event) });
        const end2 = second.at(-1) as unknown as Finished;
        expect(end2.type).toBe(EventType.RUN_FINISHED);
        expect(end2.result).toMatchObject({ outcome: 'completed', turnId: end1.result.turnId });
        // The result is the client's own tool message: no second copy from the server.
        expect(second.map((e) => e.type)).not.toContain(EventType.TOOL_CALL_RESULT);
        const texts = result.newMessages.flatMap((m) => (m.role === 'assistant' && typeof m.content === 'string' ? [m.content] : []));
        expect(texts.join('\n')).toContain('You are in Lisbon.');
        const after = await session.state();
        expect(after.clientToolCalls).toBeUndefined();
        // The turn's usage is kept per turn (usage.perTurn), with its outcome.
        expect(after.usage.perTurn).toEqual([expect.objectContaining({ turnId: end1.result.turnId, messageId: 'u1', outcome: 'completed' })]);
        expect(after.usage.perTurn![0]!.usage!.outputTokens).toBeGreaterThan(0);
        const transcript = await session.transcript(0, 50);
        const results = transcript.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).filter((b) => (b as { type: string }).type === 'tool_result');
        expect(results).toEqual([expect.objectContaining({ tool_use_id: 'toolu_client_loc', content: 'Lisbon, Portugal' })]);

        // A result sent again (a resent thread) is not taken twice: the run only replays the thread.
        const again: BaseEvent[] = [];
        const resent = new HttpAgent({ url: `${server.url}/api/sessions/${id}/ag-ui`, headers: { Authorization: `Bearer ${TEST_TOKEN}` }, threadId: id });
        resent.setMessages([...agent.messages.slice(0, 2), { id: 'r1', role: 'tool', toolCallId: 'toolu_client_loc', content: 'Lisbon, Portugal' }]);
        await resent.runAgent({ runId: 'run-3' }, { onEvent: ({ event }) => void again.push(event) });
        expect(again.map((e) => e.type)).toEqual([EventType.RUN_STARTED, EventType.MESSAGES_SNAPSHOT, EventType.STATE_SNAPSHOT, EventType.RUN_FINISHED]);

        // Client tools belong to the message that declared them: a later message without them is answered without.
        const other = new HttpAgent({ url: `${server.url}/api/sessions/${id}/ag-ui`, headers: { Authorization: `Bearer ${TEST_TOKEN}` }, threadId: id });
        other.addMessage({ id: 'u2', role: 'user', content: 'where am I now?' });
        const plain = await other.runAgent({ runId: 'run-4' });
        expect(plain.newMessages.flatMap((m) => (m.role === 'assistant' && typeof m.content === 'string' ? [m.content] : [])).join('\n')).toContain('I cannot know where you are.');

        // A frontend tool may not take the name of one of the session's own tools.
        const clash = await fetch(`${server.url}/api/sessions/${id}/ag-ui`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${TEST_TOKEN}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ threadId: id, runId: 'run-5', messages: [{ id: 'u3', role: 'user', content: 'hi' }], tools: [{ name: 'read_file', description: 'mine', parameters: { type: 'object' } }], context: [], state: {}, forwardedProps: {} }),
        });
        expect(clash.status).toBe(400);
        expect(((await clash.json()) as { detail: string }).detail).toContain('read_file');
      });
    } finally {
      await server.close();
      if (id) await env.client.workflow.getHandle(id).terminate('test over').catch(() => undefined);
    }
  }, 180_000);
});
