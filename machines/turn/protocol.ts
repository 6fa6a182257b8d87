// What a turn hears (events), what it asks its runner to do (directives) and what it hands
// back when it is over (its result), with the ids of the activities and timers it starts.
import { z } from 'zod';
import { callUsageSchema, exhaustionSchema, usageSchema } from '../budget';
import type { CallBudget } from '../call-ceiling';
import { nonNeg } from '../core';
import { contentBlockSchema, type Message } from '../conversation';
import { modelFailureClassSchema } from '../model-retry';
import { finishTaskSchema } from '../task-outcome';
import { toolCallEventSchema, type ToolCallDirective } from '../tool-call';
import { TURN_OUTCOMES } from './outcome';
import { refusalSchema, toolStatsSchema } from './state';
import { lazySchema } from '../lazy-schema';

export const turnEventSchema = lazySchema(() => z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('start'), text: z.string().min(1) }),
  z.strictObject({
    type: z.literal('model_response'),
    content: z.array(contentBlockSchema),
    stopReason: z.string().nullable().optional(),
    usage: callUsageSchema,
    /** A tool_use cut by max_tokens, left out of `content` (its input JSON never closed). */
    cutToolUse: z.strictObject({ id: z.string(), name: z.string() }).optional(),
    /** stop_details of a refusal, as the API sent them. */
    refusal: refusalSchema.optional(),
  }),
  z.strictObject({
    type: z.literal('model_failed'),
    message: z.string(),
    retryable: z.boolean(),
    retryAfterMs: z.number().int().nonnegative().optional(),
    /** The row of the retry table (machines/model-retry.ts); absent: transient if retryable, else fatal. */
    failureClass: modelFailureClassSchema.optional(),
    /** What the failed attempt was billed for (counted before anything else is decided). */
    usage: callUsageSchema.optional(),
    /** The call was not made: its worst case could cross this limit (machines/call-ceiling.ts). */
    overBudget: z.strictObject({ limit: z.enum(['input_tokens', 'output_tokens', 'cost_usd']), left: nonNeg, needed: nonNeg }).optional(),
  }),
  z.strictObject({ type: z.literal('timer_fired'), timerId: z.string() }),
  z.strictObject({ type: z.literal('tool'), callId: z.string(), event: toolCallEventSchema }),
  z.strictObject({ type: z.literal('answer'), callId: z.string(), text: z.string() }),
  z.strictObject({ type: z.literal('steer'), text: z.string().min(1) }),
  z.strictObject({
    type: z.literal('interrupt'),
    reason: z.string().optional(),
    partialText: z.string().optional(),
    /** What the interrupted call had been billed for (input, and output estimated from the streamed text). */
    partialUsage: callUsageSchema.optional(),
  }),
]));
export type TurnEvent = z.infer<typeof turnEventSchema>;

export const turnResultSchema = lazySchema(() => z.strictObject({
  turnId: z.string(),
  outcome: z.enum(TURN_OUTCOMES),
  steps: z.number().int().nonnegative(),
  usage: usageSchema,
  toolCalls: toolStatsSchema,
  finalOutput: z.string().nullable(),
  error: z.string().nullable(),
  exhaustion: exhaustionSchema.nullable(),
  /** Steers the turn could not apply; the session queues them as messages, never drops them. */
  unappliedSteers: z.array(z.string()),
  /** For `refused`: the API's category and explanation. */
  refusal: refusalSchema.nullable().optional(),
  /** The model's last stop_reason (max_tokens for `truncated`). */
  stopReason: z.string().nullable().optional(),
  /** The valid finish_task call that ended the turn (task agents only). */
  finish: finishTaskSchema.optional(),
}));
export type TurnResult = z.infer<typeof turnResultSchema>;

export type TurnDirective =
  | ToolCallDirective
  /** Append to the conversation store, in order, before executing what follows. */
  | { readonly type: 'append_messages'; readonly messages: readonly Message[] }
  /** Call the model with the stored conversation; answer with `model_response` or `model_failed`.
   *  `maxTokens`: a larger output limit than configured; `compact`: compact the conversation
   *  first; `continuation`: the conversation ends with the model's paused answer (pause_turn);
   *  `budget`: what the call may still spend (its worst case is fitted to it before it is sent). */
  | {
      readonly type: 'call_model';
      readonly turnId: string;
      readonly step: number;
      readonly attempt: number;
      readonly activityId: string;
      readonly maxTokens?: number;
      readonly compact?: boolean;
      readonly continuation?: boolean;
      readonly budget?: CallBudget;
    }
  /** The model refused: the conversation goes back to what it was before this turn's
   *  message, as if it had not been sent (the API advises removing a refused prompt);
   *  the transcript keeps it, and its usage stays counted. */
  | { readonly type: 'rollback_turn' }
  /** The turn is over: hand the result to the session (`turn_finished`) or the parent goal. */
  | { readonly type: 'finish'; readonly result: TurnResult };

export const modelActivityId = (turnId: string, step: number, attempt: number): string => `model:${turnId}:${step}:${attempt}`;
export const retryTimerId = (turnId: string, step: number, attempt: number): string => `retry:${turnId}:${step}:${attempt}`;
