// The @temporalio/openai-agents peer: the OpenAI Agents SDK's loop in a workflow through
// TemporalOpenAIRunner (model calls as the plugin's activity, non-streaming Responses API →
// the stand-in's /v1/responses), read_file as an activity running Keel's tool code. Same
// session shape as the floor.
import { Agent, tool } from '@openai/agents-core';
import { TemporalOpenAIRunner } from '@temporalio/openai-agents/workflow';
import { allHandlersFinished, condition, defineSignal, defineUpdate, proxyActivities, setHandler } from '@temporalio/workflow';
import type { peerToolActivities } from './tool-activity';

const { runTool } = proxyActivities<typeof peerToolActivities>({ startToCloseTimeout: '2 minutes', heartbeatTimeout: '30 seconds', retry: { maximumAttempts: 3 } });

export const turnUpdate = defineUpdate<string, [string]>('turn');
export const closeSignal = defineSignal('close');

export async function openAiAgentsSession(input: { workspace: string; model: string }): Promise<number> {
  let closed = false;
  let turns = 0;
  const readFile = tool({
    name: 'read_file',
    description: 'Read a text file of the workspace.',
    parameters: { type: 'object' as const, properties: { path: { type: 'string' } }, required: ['path'] as const, additionalProperties: false as const },
    execute: async (args) => (await runTool({ workspace: input.workspace, tool: 'read_file', input: args })).content,
  });
  const agent = new Agent({ name: 'bench', instructions: 'Follow the files.', model: input.model, tools: [readFile] });
  const runner = new TemporalOpenAIRunner({ defaultModelParams: { startToCloseTimeout: '2 minutes' } });
  setHandler(closeSignal, () => {
    closed = true;
  });
  setHandler(turnUpdate, async (text) => {
    // Like the floor: only the current turn goes to the model.
    const result = await runner.run(agent, text, { maxTurns: 100 });
    turns++;
    // The whole turn's text, as the other variants return it.
    return result.newItems.flatMap((item) => (item.type === 'message_output_item' ? [item.content] : [])).join('');
  });
  await condition(() => closed && allHandlersFinished());
  return turns;
}
