// What a turn holds: its configuration, its counts and its states, and how one is created.
import { z } from 'zod';
import { exhaustionSchema, turnLimitsSchema, usageSchema, ZERO_USAGE, type TurnLimits } from '../budget';
import type { ToolResultStatus } from '../events';
import { toolCallStateSchema } from '../tool-call';
import { COMPLETE_REASONS } from './outcome';
import { lazySchema, once } from '../lazy-schema';

export const toolStatsSchema = lazySchema(() => z.strictObject({
  success: z.number().int().nonnegative(),
  error: z.number().int().nonnegative(),
  timeout: z.number().int().nonnegative(),
  // Runs from before this status existed carry no count: they had none.
  limit: z.number().int().nonnegative().default(0),
  cancelled: z.number().int().nonnegative(),
  denied: z.number().int().nonnegative(),
}));
export type ToolStats = Record<ToolResultStatus, number>;
export const ZERO_TOOL_STATS: ToolStats = { success: 0, error: 0, timeout: 0, limit: 0, cancelled: 0, denied: 0 };

export const turnConfigSchema = lazySchema(() => z.strictObject({
  turnId: z.string().min(1),
  limits: turnLimitsSchema,
  /** Tools that only read: they may run in parallel within a step. */
  readOnlyTools: z.array(z.string()),
  /** The ask-the-human tool's name, answered by `answer` instead of an activity. */
  askTool: z.string().nullable(),
  /** A task agent's finish tool (machines/task-outcome.ts): recorded here, and the turn ends after its step. */
  finishTool: z.string().nullable().optional(),
  approvalTimeoutMs: z.number().int().positive().nullable(),
  maxParallelTools: z.number().int().positive(),
  /** A shorter backoff than the retry table's (tests); absent: the table's row (machines/model-retry.ts). */
  retryBackoffMs: z.array(z.number().int().nonnegative()).optional(),
  /** The retry table's row its model calls read (machines/model-retry.ts); absent: 'turn', a session's. */
  retryRow: z.enum(['turn', 'unattended_turn']).optional(),
  /** The output limit of a call, and the larger one a call cut inside a tool_use is retried with once (null: no larger one). */
  maxTokens: z.number().int().positive().nullable().optional(),
  raisedMaxTokens: z.number().int().positive().nullable().optional(),
}));
export type TurnConfig = z.infer<typeof turnConfigSchema>;

const common = once(() => ({
  config: turnConfigSchema,
  usage: usageSchema,
  /** Steer texts waiting for the next safe boundary. */
  steers: z.array(z.string()),
  toolStats: toolStatsSchema,
  /** Text of the model's latest answer: the turn's final output when it ends. */
  text: z.string().nullable(),
}));
const step = lazySchema(() => z.number().int().nonnegative());
/** What this step already did once (each at most once a step): a larger limit, a compaction. */
const escalation = once(() => ({
  raised: z.boolean().optional(),
  compacted: z.boolean().optional(),
  /** The call continues a paused answer (pause_turn): retries must send it the same way. */
  continuation: z.boolean().optional(),
}));
export const refusalSchema = lazySchema(() => z.strictObject({ category: z.string().nullable(), explanation: z.string().nullable() }));

export const turnStateSchema = lazySchema(() => z.discriminatedUnion('status', [
  z.strictObject({ status: z.literal('idle'), ...common() }),
  z.strictObject({ status: z.literal('calling_llm'), ...common(), step, attempt: z.number().int().positive(), activityId: z.string(), ...escalation() }),
  z.strictObject({
    status: z.literal('retry_wait'),
    ...common(),
    step,
    attempt: z.number().int().positive(),
    timerId: z.string(),
    error: z.string(),
    ...escalation(),
    /** The retry compacts first (context window). */
    compact: z.boolean().optional(),
  }),
  z.strictObject({ status: z.literal('executing_tools'), ...common(), step, calls: z.array(toolCallStateSchema).min(1) }),
  z.strictObject({
    status: z.literal('completed'),
    ...common(),
    step,
    reason: z.enum(COMPLETE_REASONS),
    stopReason: z.string().nullable(),
    exhaustion: exhaustionSchema.nullable(),
    refusal: refusalSchema.nullable().optional(),
  }),
  z.strictObject({ status: z.literal('interrupted'), ...common(), step, reason: z.string() }),
  z.strictObject({ status: z.literal('failed'), ...common(), step, error: z.string() }),
]));
export type TurnState = z.infer<typeof turnStateSchema>;
export type TurnStatus = TurnState['status'];

export interface NewTurn {
  readonly turnId: string;
  readonly limits?: TurnLimits;
  readonly readOnlyTools?: readonly string[];
  readonly askTool?: string | null;
  readonly finishTool?: string | null;
  readonly approvalTimeoutMs?: number | null;
  readonly maxParallelTools?: number;
  readonly retryBackoffMs?: readonly number[];
  readonly retryRow?: 'turn' | 'unattended_turn';
  readonly maxTokens?: number | null;
  readonly raisedMaxTokens?: number | null;
}

export function createTurn(init: NewTurn): TurnState {
  return {
    status: 'idle',
    config: {
      turnId: init.turnId,
      limits: init.limits ?? { inputTokens: null, outputTokens: null, costUsd: null, maxSteps: null },
      readOnlyTools: [...(init.readOnlyTools ?? [])],
      askTool: init.askTool ?? null,
      ...(init.finishTool !== undefined && init.finishTool !== null ? { finishTool: init.finishTool } : {}),
      approvalTimeoutMs: init.approvalTimeoutMs ?? null,
      maxParallelTools: init.maxParallelTools ?? 4,
      ...(init.retryBackoffMs !== undefined ? { retryBackoffMs: [...init.retryBackoffMs] } : {}),
      ...(init.retryRow !== undefined && init.retryRow !== 'turn' ? { retryRow: init.retryRow } : {}),
      ...(init.maxTokens !== undefined ? { maxTokens: init.maxTokens } : {}),
      ...(init.raisedMaxTokens !== undefined ? { raisedMaxTokens: init.raisedMaxTokens } : {}),
    },
    usage: ZERO_USAGE,
    steers: [],
    toolStats: ZERO_TOOL_STATS,
    text: null,
  };
}
