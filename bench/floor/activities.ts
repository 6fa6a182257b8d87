// The floor's activities: one non-streaming Messages API call through the same SDK and
// stand-in Keel uses, and Keel's own tool activity (runTool) for the tool calls.
import Anthropic from '@anthropic-ai/sdk';
import { createToolActivities } from '../../activities/tools/activity';

export interface FloorModelInput {
  model: string;
  messages: Anthropic.MessageParam[];
  tools: Anthropic.Tool[];
}

export function createFloorActivities(env: NodeJS.ProcessEnv) {
  const anthropic = new Anthropic({ apiKey: env.ANTHROPIC_API_KEY, baseURL: env.ANTHROPIC_BASE_URL, maxRetries: 2 });
  return {
    // Keel's own tool activities: the same code runs the floor's tool calls.
    ...createToolActivities(),
    async floorModel(input: FloorModelInput): Promise<Pick<Anthropic.Message, 'content' | 'stop_reason' | 'usage'>> {
      const message = await anthropic.messages.create({ model: input.model, max_tokens: 4096, messages: input.messages, tools: input.tools });
      return { content: message.content, stop_reason: message.stop_reason, usage: message.usage };
    },
  };
}

export type FloorActivities = ReturnType<typeof createFloorActivities>;
