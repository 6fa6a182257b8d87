// Start input of every workflow, as zod schemas: the workflows parse their input with them
// first thing (invalid input fails the workflow at once, non-retryable, naming the field)
// and the client SDK parses with the same schemas before it starts anything. The
// TypeScript option types stay the hand-written interfaces next to each workflow; a
// compile-time check below keeps each schema and its interface in step.
import { z } from 'zod';
import { budgetLimitsSchema, turnLimitsSchema } from '../machines/budget';
// The policy's schema from its own module: machines/policy/index.ts brings the rule matching
// (picomatch), which must not be among the preloaded modules (worker/workflow-bundle.ts).
import { PolicyConfig } from '../machines/policy/config';
import { GOAL_TEXT_MAX } from './definitions';
import { WORKSPACE_HOST_PATTERN } from './workspace-host';
import type { AgentInput } from './agent';
import type { GoalOptions } from './goal';
import type { SessionOptions } from './session';
import { lazySchema } from '../machines/lazy-schema';
import { definedToolKinds } from '../machines/tool-spec';

const absolutePath = (what: string) =>
  z
    .string()
    .min(1, `${what} must not be empty`)
    .refine((p) => p.startsWith('/'), `${what} must be an absolute path`);
const positiveInt = lazySchema(() => z.number().int().positive());
/** A host name as KEEL_WORKSPACE_HOST spells it (it becomes part of a task queue name). */
const workspaceHost = lazySchema(() => z.string().regex(new RegExp(WORKSPACE_HOST_PATTERN), 'workspaceHost: letters, digits, ".", "_" and "-", at most 63, as the worker\'s KEEL_WORKSPACE_HOST'));
const nonNegInt = lazySchema(() => z.number().int().nonnegative());
const timeoutMs = lazySchema(() => positiveInt.nullable().optional());
/** Activity option overrides (tests shorten retries); Temporal validates their values. */
const activityOverrides = lazySchema(() => z.record(z.string(), z.unknown()).optional());
const backoff = lazySchema(() => z.array(nonNegInt).max(20).optional());
/** Extended thinking: the API's minimum budget is 1,024 tokens. */
const thinkingBudget = lazySchema(() => z.number().int().min(1024, 'budgetTokens must be at least 1024 (the Messages API minimum)'));
const thinking = lazySchema(() => z.strictObject({ budgetTokens: thinkingBudget }));
/** A session's thinking: a budget (and, with `interleaved`, thinking between tool calls too), or `adaptive` (the model decides). */
const sessionThinking = lazySchema(() => z.union([z.strictObject({ budgetTokens: thinkingBudget, interleaved: z.boolean().optional() }), z.strictObject({ adaptive: z.literal(true) })]));

export const sessionOptionsSchema = lazySchema(() => z.strictObject({
  workspace: absolutePath('workspace'),
  workspaceHost: workspaceHost.optional(),
  workspaceHostWaitMs: positiveInt.optional(),
  model: z.string().min(1).optional(),
  maxTokens: positiveInt.optional(),
  system: z.string().optional(),
  policy: PolicyConfig.optional(),
  headless: z.boolean().optional(),
  limits: budgetLimitsSchema.partial().optional(),
  maxConsecutiveErrors: positiveInt.optional(),
  approvalTimeoutMs: timeoutMs,
  idleTimeoutMs: timeoutMs,
  maxParallelTools: positiveInt.max(64).optional(),
  retryBackoffMs: backoff,
  mcp: z.boolean().optional(),
  storeDir: absolutePath('storeDir').optional(),
  continueAsNewAfterTurns: positiveInt.nullable().optional(),
  continueAsNewWhenSuggested: z.boolean().optional(),
  modelActivity: activityOverrides,
  compactAboveTokens: positiveInt.optional(),
  thinking: sessionThinking.optional(),
  promptCaching: z.boolean().optional(),
  promptCacheTtl: z.enum(['5m', '1h']).optional(),
  /** Set by Keel's clients when they hold the encryption keys: a control that names nothing
   *  (resume, stop, reset, restart, approvePlan) must then carry its empty argument, which the
   *  encryption authenticates; one sent with no payload at all proves nothing and is refused. */
  authenticatedControls: z.boolean().optional(),
}));

export const goalOptionsSchema = lazySchema(() => z.strictObject({
  goal: z.string().trim().min(1, 'goal must not be empty').max(GOAL_TEXT_MAX, 'at most 100,000 characters (put a long specification in a file in the workspace)'),
  workspace: absolutePath('workspace'),
  workspaceHost: workspaceHost.optional(),
  workspaceHostWaitMs: positiveInt.optional(),
  model: z.string().min(1).optional(),
  maxTokens: positiveInt.optional(),
  policy: PolicyConfig.optional(),
  headless: z.boolean().optional(),
  autoApprove: z.boolean().optional(),
  maxConcurrency: positiveInt.max(64).optional(),
  maxTaskAttempts: positiveInt.max(100).optional(),
  maxPlanAttempts: positiveInt.max(100).optional(),
  maxReviewCycles: positiveInt.max(100).optional(),
  planApprovalTimeoutMs: timeoutMs,
  limits: budgetLimitsSchema.pick({ inputTokens: true, outputTokens: true, costUsd: true, wallClockMs: true }).partial().optional(),
  maxStepsPerTask: positiveInt.optional(),
  approvalTimeoutMs: timeoutMs,
  maxParallelTools: positiveInt.max(64).optional(),
  retryBackoffMs: backoff,
  storeDir: absolutePath('storeDir').optional(),
  modelActivity: activityOverrides,
  thinking: z.strictObject({ budgetTokens: thinkingBudget.optional(), byRole: z.record(z.string(), thinking.nullable()).optional() }).optional(),
  maxTasks: positiveInt.max(10_000).optional(),
  continueAsNewAfterEvents: positiveInt.min(20).nullable().optional(),
  continueAsNewWhenSuggested: z.boolean().optional(),
  /** Set by Keel's clients when they hold the encryption keys: a control that names nothing
   *  (resume, stop, reset, restart, approvePlan) must then carry its empty argument, which the
   *  encryption authenticates; one sent with no payload at all proves nothing and is refused. */
  authenticatedControls: z.boolean().optional(),
}));

const toolEntrySchema = lazySchema(() => z.object({
  spec: z.object({ name: z.string().min(1), description: z.string(), input_schema: z.record(z.string(), z.unknown()) }),
  readOnly: z.boolean(),
  activityOptions: z.record(z.string(), z.unknown()).optional(),
  mcp: z.boolean().optional(),
  local: z.boolean().optional(),
  /** A worker-defined tool's kind (activities/setup.ts SetupTool.kind). */
  kind: z.enum(definedToolKinds).optional(),
}));

/** A task agent is started by its goal only; the same checks keep a hand-started one honest. */
export const agentInputSchema = lazySchema(() => z.strictObject({
  goalId: z.string().min(1),
  goal: z.string().min(1),
  taskId: z.string().min(1),
  attempt: positiveInt,
  title: z.string(),
  instructions: z.string(),
  role: z.string(),
  workspace: absolutePath('workspace'),
  workspaceHost: workspaceHost.optional(),
  workspaceHostWaitMs: positiveInt.optional(),
  storeDir: z.string().min(1),
  storeId: z.string().min(1).max(200).optional(),
  model: z.string().min(1),
  maxTokens: positiveInt,
  tools: z.array(toolEntrySchema),
  toolsRef: z.string().nullable(),
  policy: PolicyConfig,
  headless: z.boolean(),
  limits: turnLimitsSchema,
  approvalTimeoutMs: positiveInt.nullable(),
  maxParallelTools: positiveInt,
  retryBackoffMs: backoff,
  modelActivity: activityOverrides,
  /** Absent only in agents started before goals issued tokens (their reports are then refused). */
  reportToken: z.string().min(1).optional(),
  earlierAttempts: z.string().optional(),
  thinking: thinking.optional(),
}));

// Compile-time: every option the interfaces name is in the schema and the other way round.
type Keys<T> = keyof T & string;
type Same<A, B> = [Exclude<A, B>, Exclude<B, A>] extends [never, never] ? true : { missing: Exclude<A, B>; extra: Exclude<B, A> };
const sessionKeys: Same<Keys<SessionOptions>, Keys<z.input<typeof sessionOptionsSchema>>> = true;
const goalKeys: Same<Keys<GoalOptions>, Keys<z.input<typeof goalOptionsSchema>>> = true;
const agentKeys: Same<Keys<AgentInput>, Keys<z.input<typeof agentInputSchema>>> = true;
void [sessionKeys, goalKeys, agentKeys];
