// AG-UI: an off-the-shelf AG-UI client (@ag-ui/client's HttpAgent) drives a Keel session
// through `keel serve`: its message starts a turn, the model's text and the tool call come
// back as AG-UI events, the approval the call waits for is answered through the API when
// the CUSTOM keel.approval_requested event arrives, and the run finishes with the reply.
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { HttpAgent } from '@ag-ui/client';
import { EventType, type BaseEvent } from '@ag-ui/core';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeelClient } from '../../client/keel-client';
import { startServer } from '../../server/main';
import { loadScenario } from '../../standin/scenario';
import { workflowsPath } from '../../worker/worker';
import { authed, TEST_TOKEN } from '../fixtures/serve-process';
import { sessionEnv } from '../fixtures/session-harness';
import { bundle, connectTestEnv, type TemporalTestEnv } from '../helpers/temporal';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

let env: TemporalTestEnv;
let workflowBundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  env = await connectTestEnv();
  workflowBundle = await bundle(workflowsPath);
});
afterAll(async () => {
  await env?.close();
});

describe('AG-UI', () => {
  it('an @ag-ui/client HttpAgent runs a turn of a session, with the tool call approved mid-run', async () => {
    const s = await sessionEnv(env, workflowBundle, await loadScenario(path.join(root, 'test/fixtures/scenarios/session-demo.yaml')), { ANTHROPIC_API_KEY: 'sk-ant-demo' });
    const keel = await KeelClient.connect({ client: env.client, taskQueue: s.taskQueue });
    const server = await startServer({ keel, port: 0, workspace: s.workspace, env: { KEEL_API_TOKEN: TEST_TOKEN, KEEL_API_APPROVER: 'ag-ui user' } });
    let id = '';
    try {
      await s.run(async () => {
        const session = await keel.startSession({ workspace: s.workspace, policy: { mode: 'ask' } });
        id = session.id;
        const api = authed(server.url);
        const agent = new HttpAgent({ url: `${server.url}/api/sessions/${id}/ag-ui`, headers: { Authorization: `Bearer ${TEST_TOKEN}` }, threadId: id });
        agent.addMessage({ id: 'u1', role: 'user', content: 'please write a note' });
        const events: BaseEvent[] = [];
        const approvals: Promise<Response>[] = [];
        const result = await agent.runAgent(
          { runId: 'run-1' },
          {
            onEvent: ({ event }) => {
              events.push(event);
              if (event.type === EventType.CUSTOM && (event as { name?: string }).name === 'keel.approval_requested') {
                const { callId } = (event as unknown as { value: { callId: string } }).value;
                approvals.push(api(`/api/workflows/${id}/approve`, { json: { callId } }));
              }
            },
          },
        );
        const types = events.map((e) => e.type);
        expect(types[0]).toBe(EventType.RUN_STARTED);
        expect(types.at(-1)).toBe(EventType.RUN_FINISHED);
        expect(types).toEqual(expect.arrayContaining([EventType.TEXT_MESSAGE_START, EventType.TEXT_MESSAGE_CONTENT, EventType.TEXT_MESSAGE_END, EventType.TOOL_CALL_START, EventType.TOOL_CALL_ARGS, EventType.TOOL_CALL_END, EventType.TOOL_CALL_RESULT]));
        expect(types.indexOf(EventType.TOOL_CALL_START)).toBeLessThan(types.indexOf(EventType.CUSTOM));
        expect(types.indexOf(EventType.CUSTOM)).toBeLessThan(types.indexOf(EventType.TOOL_CALL_RESULT));
        expect(approvals).toHaveLength(1);
        expect((await approvals[0]!).status).toBe(200);

        // What the AG-UI client built from the events: the tool call with its exact args, and the reply.
        const toolCall = result.newMessages.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []) : []))[0]!;
        expect(toolCall.function.name).toBe('write_file');
        expect(JSON.parse(toolCall.function.arguments)).toEqual({ path: 'NOTE.md', content: 'Written by Keel.\n' });
        const texts = result.newMessages.flatMap((m) => (m.role === 'assistant' && typeof m.content === 'string' ? [m.content] : []));
        expect(texts.join('\n')).toContain('Done. The tool said what it said');
        expect(await fs.readFile(path.join(s.workspace, 'NOTE.md'), 'utf8')).toBe('Written by Keel.\n');
      });
    } finally {
      await server.close();
      if (id) await env.client.workflow.getHandle(id).terminate('test over').catch(() => undefined);
    }
  });
});
