// What sessions, goals and task agents share in their protocols: the payload schemas of the
// controls they all take (approve, deny, a reason, a page of the log), the inputs derived from
// them, and the waiting call they answer. Each kind's own messages are in ./session.ts,
// ./goal.ts and ./agent.ts; workflows/definitions.ts re-exports them all.
import { z } from 'zod';
import { clientToolsSchema, type ClientTool } from '../client-tools';
import type { Json } from '../../machines/index';
import type { PolicyConfig, PolicyOrigin } from '../../machines/policy';
import { lazySchema } from '../../machines/lazy-schema';

const text = lazySchema(() => z.string().trim().min(1, 'text must not be empty'));
/** What a goal keeps in its state (feedback, a task's new instructions) travels in every
 *  continue-as-new input, one payload under the server's 2 MB limit: bounded here. */
export const GOAL_TEXT_MAX = 100_000;
export const goalText = lazySchema(() => text.max(GOAL_TEXT_MAX, 'at most 100,000 characters (put longer material in a file in the workspace)'));
/**
 * The largest message a session takes, in UTF-8 bytes: Temporal refuses a payload over 2 MB
 * ("Failed to signal Workflow", after workflow tasks that time out on the way), and a
 * message travels JSON-escaped, maybe sealed and base64-encoded, and again in the queue a
 * continue-as-new carries. 512 KiB is where Temporal starts warning. Clients refuse larger
 * messages before sending them, naming the limit.
 */
export const MESSAGE_MAX_BYTES = 512 * 1024;

/** Why `text` cannot be sent as one message, or null when it fits. */
export function messageTooLarge(text: string): string | null {
  const bytes = new TextEncoder().encode(text).length;
  if (bytes <= MESSAGE_MAX_BYTES) return null;
  return `text: ${bytes.toLocaleString('en-US')} bytes, more than the ${MESSAGE_MAX_BYTES.toLocaleString('en-US')} bytes (512 KiB) a message may have; put longer material in a file in the workspace and name it`;
}
const optionalObject = <T extends z.ZodRawShape>(shape: T) => z.strictObject(shape).optional();

export const userMessageSchema = lazySchema(() => z.union([
  text.transform((t) => ({ text: t, messageId: undefined as string | undefined, clientTools: undefined as ClientTool[] | undefined })),
  // clientTools: tools the sender runs itself, offered in this message's turn (workflows/client-tools.ts).
  z.strictObject({ text, messageId: z.string().min(1).optional(), clientTools: clientToolsSchema.optional() }),
]));
export const approveSchema = lazySchema(() => z.strictObject({
  callId: z.string().min(1),
  scope: z.enum(['once', 'session']).optional(),
  approver: z.string().min(1).optional(),
  /** With scope `session`: a policy rule to remember instead of the exact call, e.g. `run_command(npm test*)`. */
  rule: z.string().min(1).optional(),
  /** Set by the worker's codec: true only when a Keel client signed the approver (shared/approver-proof.ts). */
  proven: z.boolean().optional(),
}));
export const denySchema = lazySchema(() => z.strictObject({ callId: z.string().min(1), reason: z.string().min(1).optional() }));
export const reasonSchema = lazySchema(() => optionalObject({ reason: z.string().min(1).optional() }).or(z.null().transform(() => undefined)));
/** Guidance for the running turn; with `agent` (a sub-agent's id, label such as `research-1`, or the `agent` call's id) for that child's turn instead. */
export const steerSchema = lazySchema(() => z.union([text.transform((t) => ({ text: t })), z.strictObject({ text, agent: z.string().trim().min(1).max(4_000).optional() })]));
export const answerSchema = lazySchema(() => z.union([z.string().transform((t) => ({ text: t })), z.strictObject({ text: z.string() })]));
const limit = (schema: z.ZodType<number>) => schema.nullable().optional();
/** Limits to raise (or remove with null): `{"outputTokens": 20000, "turns": 50}`. */
export const raiseBudgetSchema = lazySchema(() => z.strictObject({
  inputTokens: limit(z.number().int().nonnegative()),
  outputTokens: limit(z.number().int().nonnegative()),
  costUsd: limit(z.number().nonnegative()),
  stepsPerTurn: limit(z.number().int().positive()),
  turns: limit(z.number().int().positive()),
  wallClockMs: limit(z.number().int().positive()),
}));
/** The argument of a control that names nothing (resume, stop, reset, restart, approvePlan):
 *  Keel's clients send `{}`, which encryption authenticates (workflows/payloads.ts
 *  `parseBareControl`); a hand-typed call may send nothing, or null. */
export const noPayloadSchema = lazySchema(() => z.union([z.undefined(), z.null(), z.strictObject({})]));
export const transcriptQuerySchema = lazySchema(() => z
  .strictObject({ from: z.number().int().nonnegative().optional(), limit: z.number().int().positive().max(500).optional() })
  .optional());

export type UserMessageInput = z.input<typeof userMessageSchema>;
export type ApproveInput = z.input<typeof approveSchema>;
export type DenyInput = z.input<typeof denySchema>;
export type ReasonInput = z.input<typeof reasonSchema>;
export type SteerInput = z.input<typeof steerSchema>;
export type AnswerInput = z.input<typeof answerSchema>;
export type RaiseBudgetInput = z.input<typeof raiseBudgetSchema>;
export type BareControlInput = z.input<typeof noPayloadSchema>;
export type TranscriptQueryInput = z.input<typeof transcriptQuerySchema>;

/** A tool call waiting for a human, as a session or a task agent shows it. */
export interface PendingApproval {
  callId: string;
  name: string;
  input: Json;
  reason: string | null;
  turnId: string;
  /** A sub-agent's call, shown as the session's (docs/sub-agents.md): which child, under which `agent` call. */
  agent?: { agentId: string; label: string; parentCallId: string };
}

/** The effective approval policy and its origin: start options bound it, the workspace file may only narrow. */
export interface PolicyView {
  effective: PolicyConfig;
  origin: PolicyOrigin;
}
