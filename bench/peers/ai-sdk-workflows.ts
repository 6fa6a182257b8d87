// The @temporalio/ai-sdk peer: the Vercel AI SDK's agent loop in a workflow, the model
// call as the plugin's activity (@ai-sdk/anthropic → the stand-in), read_file as an
// activity running Keel's tool code. Same session shape as the floor: a `turn` update runs
// one turn and returns the final text, `close` ends the session.
import { generateText, jsonSchema, stepCountIs, streamText, tool, type ModelMessage } from 'ai';
import { TemporalProvider } from '@temporalio/ai-sdk/workflow';
import { allHandlersFinished, condition, defineSignal, defineUpdate, proxyActivities, setHandler } from '@temporalio/workflow';
import { WorkflowStream } from '@temporalio/workflow-streams/workflow';
import type { peerToolActivities } from './tool-activity';

const { runTool } = proxyActivities<typeof peerToolActivities>({ startToCloseTimeout: '2 minutes', heartbeatTimeout: '30 seconds', retry: { maximumAttempts: 3 } });

export const turnUpdate = defineUpdate<string, [string]>('turn');
export const closeSignal = defineSignal('close');

interface PeerInput {
  workspace: string;
  model: string;
}

function tools(workspace: string) {
  return {
    read_file: tool({
      description: 'Read a text file of the workspace.',
      inputSchema: jsonSchema<{ path: string }>({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'], additionalProperties: false }),
      execute: async (input: { path: string }) => (await runTool({ workspace, tool: 'read_file', input })).content,
    }),
  };
}

async function session(input: PeerInput, streaming: boolean): Promise<number> {
  let closed = false;
  let turns = 0;
  // The stream the streaming activity publishes to (Keel hosts one the same way).
  const stream = streaming ? new WorkflowStream() : null;
  const provider = new TemporalProvider({
    languageModel: { startToCloseTimeout: '2 minutes', retry: { maximumAttempts: 3 }, ...(streaming ? { streamingTopic: 'model' } : {}) },
  });
  const model = provider.languageModel(input.model);
  setHandler(closeSignal, () => {
    closed = true;
  });
  setHandler(turnUpdate, async (text) => {
    // Like the floor: only the current turn goes to the model.
    const messages: ModelMessage[] = [{ role: 'user', content: text }];
    const options = { model, messages, tools: tools(input.workspace), stopWhen: stepCountIs(100), maxOutputTokens: 4096 };
    let out: string;
    if (streaming) {
      const result = streamText(options);
      out = (await result.steps).map((s) => s.text).join('');
    } else {
      const result = await generateText(options);
      out = result.steps.map((s) => s.text).join('');
    }
    turns++;
    return out;
  });
  await condition(() => closed && allHandlersFinished());
  void stream;
  return turns;
}

export async function aiSdkSession(input: PeerInput): Promise<number> {
  return session(input, false);
}

export async function aiSdkStreamSession(input: PeerInput): Promise<number> {
  return session(input, true);
}
