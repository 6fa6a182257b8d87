// What a model call takes and returns. The conversation is a tagged union so that a
// long session can pass it by reference instead of inline (a `{ kind: 'ref' }` variant,
// with the store, arrives with the session issue): inline messages in every activity
// input would make workflow history grow with the square of the conversation.
import type Anthropic from '@anthropic-ai/sdk';
import { z } from 'zod';
import type { ModelCost } from './llm-pricing';

export type ModelConversation = { kind: 'inline'; messages: Anthropic.MessageParam[] };

export interface ModelCallInput {
  /** Correlates stream events and logs with the caller's turn; optional. */
  callId?: string;
  model: string;
  maxTokens: number;
  system?: string | Anthropic.TextBlockParam[];
  tools?: Anthropic.ToolUnion[];
  toolChoice?: Anthropic.ToolChoice;
  thinking?: Anthropic.ThinkingConfigParam;
  temperature?: number;
  stopSequences?: string[];
  conversation: ModelConversation;
  /** Cache breakpoints on the system prompt and the tool definitions (default true). */
  promptCaching?: boolean;
  /** Publish deltas to the calling workflow's stream (default true). */
  publish?: boolean;
}

export interface ModelCallResult {
  /** As the API sent it: content blocks untouched, thinking signatures included. */
  message: Anthropic.Message;
  /** `max_tokens`, `pause_turn` and `refusal` are results for the caller to act on, not errors. */
  stopReason: Anthropic.StopReason | null;
  usage: Anthropic.Usage;
  requestId: string | null;
  model: string;
  /** `null` when the model is not in the price table: unknown, not free. */
  cost: ModelCost | null;
  attempt: number;
}

const block = z.looseObject({ type: z.string() });
const messageSchema = z.looseObject({
  role: z.enum(['user', 'assistant']),
  content: z.union([z.string(), z.array(block)]),
});

const conversationSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('inline'), messages: z.array(messageSchema).min(1) }),
]);

// The API validates the fine structure; this catches what would waste a paid call or
// point at a bug in the caller, before any request is sent.
export const modelCallInputSchema = z.object({
  callId: z.string().min(1).optional(),
  model: z.string().min(1),
  maxTokens: z.number().int().positive(),
  system: z.union([z.string(), z.array(block)]).optional(),
  tools: z.array(z.looseObject({ name: z.string().min(1) })).optional(),
  toolChoice: block.optional(),
  thinking: block.optional(),
  temperature: z.number().min(0).max(1).optional(),
  stopSequences: z.array(z.string()).optional(),
  conversation: conversationSchema,
  promptCaching: z.boolean().optional(),
  publish: z.boolean().optional(),
});

/** The messages to send, wherever the conversation lives. */
export function messagesOf(conversation: ModelConversation): Anthropic.MessageParam[] {
  switch (conversation.kind) {
    case 'inline':
      return conversation.messages;
  }
}
