// The API's request and response shapes. A control's body is the payload schema of that
// control in the workflow's protocol table (workflows/protocol/session.ts SESSION_CONTROLS,
// goal.ts GOAL_CONTROLS), or narrows it and pipes into it, so the API accepts exactly what a
// workflow accepts, and the OpenAPI document (server/openapi.ts) is generated from the same objects.
import { z } from 'zod';
import { taskSchema } from '../machines/task-graph';
import { GOAL_TEXT_MAX } from '../workflows/protocol/controls';
import { GOAL_CONTROLS } from '../workflows/protocol/goal';
import { SESSION_CONTROLS } from '../workflows/protocol/session';

/** Goals and sessions, and task agents (`<goal>/task-<id>/<attempt>`: a `/`, sent as %2F in a path). */
export const workflowIdSchema = z.string().regex(/^[A-Za-z0-9._:@/-]{1,200}$/, 'a workflow id: 1-200 of A-Z a-z 0-9 . _ : @ - /');
/** An Idempotency-Key becomes the workflow id (`goal-<key>`), so a retried start is the same workflow. */
/** An AG-UI thread's id on POST /api/ag-ui: its session is `agui-<threadId>`. */
export const agUiThreadIdSchema = z.string().regex(/^[A-Za-z0-9._:-]{1,100}$/, 'threadId: 1-100 of A-Z a-z 0-9 . _ : -');
export const idempotencyKeySchema = z.string().regex(/^[A-Za-z0-9._:-]{1,100}$/, 'Idempotency-Key: 1-100 of A-Z a-z 0-9 . _ : -');

const mode = z.enum(['read-only', 'ask', 'auto-edit', 'full-auto']);
/** A directory inside the server's workspace (`keel serve --workspace`), relative to it: agents never work elsewhere. */
const workspace = z
  .string()
  .min(1)
  .max(4096)
  .regex(/^(?![/\\])(?!(?:.*[/\\])?\.\.(?:[/\\]|$))/, "a path relative to the server's workspace, without ..");

/**
 * Text that must hold more than whitespace. The workflows trim and then require one
 * character; a trim is no part of a JSON Schema, so the document carries this pattern
 * (a client or fuzzer that reads it never sends a body the server then refuses).
 */
const nonBlank = z.string().regex(/\S/, 'text must not be blank');

export const startGoalBody = z.strictObject({
  goal: nonBlank.trim().max(20_000),
  /** Directory the agents work in, relative to the server's --workspace (default: that one). */
  workspace: workspace.optional(),
  /** Create the workspace directory (inside the server's) when it does not exist. */
  createWorkspace: z.boolean().optional(),
  mode: mode.optional(),
  autoApprove: z.boolean().optional(),
  budgetUsd: z.number().positive().max(1_000_000).optional(),
  model: z.string().min(1).max(200).optional(),
});
export const startSessionBody = z.strictObject({
  workspace: workspace.optional(),
  createWorkspace: z.boolean().optional(),
  mode: mode.optional(),
  model: z.string().min(1).max(200).optional(),
  system: z.string().min(1).max(100_000).optional(),
});

/** The approver comes from the token, never from the body. */
/** The approver comes from the token, never from the body (a goal's `approve` takes the session's payload). */
export const approveBody = SESSION_CONTROLS.approve.input.omit({ approver: true, proven: true });
export const denyBody = SESSION_CONTROLS.deny.input;
/** Client tools are AG-UI's (server/ag-ui.ts), not this route's. */
export const messageBody = z.union([nonBlank, z.strictObject({ text: nonBlank, messageId: z.string().min(1).optional() })]).pipe(SESSION_CONTROLS.userMessage.input);
export const steerBody = z.union([nonBlank, z.strictObject({ text: nonBlank, agent: nonBlank.optional().describe("a running sub-agent's id, label (research-1) or agent call id: the steer is for that child's turn") })]).pipe(SESSION_CONTROLS.steer.input);
export const answerBody = SESSION_CONTROLS.answer.input;
/** interrupt, pause, close and a goal's cancel: the same optional reason. */
export const reasonBody = SESSION_CONTROLS.interrupt.input;
export const raiseBudgetBody = SESSION_CONTROLS.raiseBudget.input;
export const rejectPlanBody = z.union([nonBlank.max(GOAL_TEXT_MAX), z.strictObject({ feedback: nonBlank.max(GOAL_TEXT_MAX) })]).pipe(GOAL_CONTROLS.rejectPlan.input);
export const resolveTaskBody = GOAL_CONTROLS.resolveTask.input;

/**
 * The part of AG-UI's RunAgentInput Keel reads: thread, run, messages, context, and the
 * answers to interrupts (resume); tools, state and forwardedProps are accepted (server/ag-ui.ts
 * says which it did not use).
 */
export const agUiRunInput = z.looseObject({
  threadId: z.string(),
  runId: z.string(),
  messages: z.array(z.looseObject({ id: z.string().min(1).max(200), role: z.string(), content: z.unknown().optional() })),
  // Frontend tools: offered to the model in this run's turn, run by the client (workflows/client-tools.ts).
  tools: z
    .array(
      z.looseObject({
        name: z.string().regex(/^[a-zA-Z0-9_-]{1,128}$/, 'a tool name is 1-128 letters, digits, _ or -'),
        description: z.string().max(4096),
        parameters: z.looseObject({ type: z.literal('object') }).optional(),
      }),
    )
    .max(64)
    .optional(),
  context: z.array(z.looseObject({ description: z.string().max(10_000), value: z.string().max(100_000) })).max(100).optional(),
  state: z.unknown().optional(),
  resume: z
    .array(z.looseObject({ interruptId: z.string().regex(/^(approval|question):.{1,200}$/, 'approval:<callId> or question:<callId>'), status: z.enum(['resolved', 'cancelled']), payload: z.unknown().optional() }))
    .max(100)
    .optional(),
});

export const listQuery = z.strictObject({
  kind: z.enum(['goal', 'session', 'agent']).optional(),
  status: z.string().regex(/^[a-z_]{1,40}$/).optional(),
  waiting: z.enum(['true', 'false']).optional(),
  all: z.enum(['true', 'false']).optional(),
  limit: z.coerce.number().int().min(1).max(500).optional(),
});

// ---- responses --------------------------------------------------------------------------

export const problemSchema = z.object({
  type: z.string(),
  title: z.string(),
  status: z.number().int(),
  detail: z.string(),
  instance: z.string().optional(),
  /** Validation failures, each naming the field (a JSON pointer into the body or the parameter). */
  errors: z.array(z.object({ pointer: z.string(), message: z.string() })).optional(),
  /** A workflow's refusal: the state machine's reason. */
  reason: z.string().optional(),
  /** A workflow's refusal: its code (`guard_failed`, `unknown_call`, `rule_does_not_cover`, …), to tell refusals apart without reading `reason`. */
  code: z.string().optional(),
});
export type Problem = z.infer<typeof problemSchema>;

export const listEntrySchema = z.object({
  id: z.string(),
  kind: z.string().nullable(),
  status: z.string().nullable(),
  pendingApprovals: z.number().int(),
  workspace: z.string().nullable(),
  execution: z.string(),
  type: z.string(),
  startTime: z.string(),
  summary: z.string().nullable(),
  closeTime: z.string().nullable(),
  /** What it waits out now (the KeelWaiting search attribute: `conversation-store`, `host:<name>`…), or null. */
  infraWaiting: z.string().nullable(),
});
export const listResponse = z.object({ items: z.array(listEntrySchema) });

export const inboxItemSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('tool_call'),
    workflowId: z.string(),
    workflowKind: z.enum(['goal', 'session']),
    callId: z.string(),
    toolName: z.string(),
    /** The exact arguments the model gave. */
    input: z.unknown(),
    reason: z.string().nullable(),
    /** For edits and writes: a unified diff of what would change. */
    diff: z.string().nullable(),
    taskId: z.string().nullable(),
    /**
     * The rule offered for "approve for session" (the narrowest rule that covers this call:
     * the whole command, or the path); send it as `rule` to remember it instead of the exact
     * call. Null when no rule can say it (`a && b`): approving for the session then remembers
     * the exact call.
     */
    suggestedRule: z.string().nullable(),
  }),
  z.object({ type: z.literal('plan'), workflowId: z.string(), goal: z.string(), planVersion: z.number().int(), tasks: z.array(taskSchema) }),
  z.object({ type: z.literal('question'), workflowId: z.string(), callId: z.string(), question: z.string() }),
]);
export type InboxItem = z.infer<typeof inboxItemSchema>;
export const inboxResponse = z.object({ items: z.array(inboxItemSchema) });

export const startedResponse = z.object({ id: z.string(), kind: z.enum(['goal', 'session']) });
export const controlResponse = z.looseObject({ status: z.string() });
/** Views of a goal or session as their queries give them (workflows/definitions.ts). */
export const goalResponse = z.looseObject({ state: z.looseObject({ goalId: z.string(), status: z.string() }), plan: z.looseObject({ tasks: z.array(taskSchema) }) });
export const sessionResponse = z.looseObject({ state: z.looseObject({ sessionId: z.string(), status: z.string() }), transcript: z.looseObject({ messages: z.array(z.unknown()) }) });
