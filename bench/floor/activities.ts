// The floor's activities: one non-streaming Messages API call through the same SDK and
// stand-in Keel uses, and Keel's own tool activity (runTool) for the tool calls.
import Anthropic from '@anthropic-ai/sdk';
import { CancelledFailure, Context } from '@temporalio/activity';
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
    /** The same call streamed, heartbeating on a 500 ms clock (as an unread Keel call does) so a cancel reaches it and aborts it. */
    async floorStreamModel(input: FloorModelInput): Promise<Pick<Anthropic.Message, 'content' | 'stop_reason' | 'usage'>> {
      const ctx = Context.current();
      const ticker = setInterval(() => ctx.heartbeat(), 500);
      try {
        const message = await anthropic.messages.stream({ model: input.model, max_tokens: 4096, messages: input.messages, tools: input.tools }, { signal: ctx.cancellationSignal }).finalMessage();
        return { content: message.content, stop_reason: message.stop_reason, usage: message.usage };
      } catch (error) {
        // Aborted by the cancel: say so (the server records a cancel, as for Keel's call), not a failure.
        if (ctx.cancellationSignal.aborted) throw new CancelledFailure('model call cancelled');
        throw error;
      } finally {
        clearInterval(ticker);
      }
    },
  };
}

export type FloorActivities = ReturnType<typeof createFloorActivities>;
