// A task agent's protocol: the input its goal starts it with (its type is the schema's
// output: the goal hands over what it resolved), the approvals it takes from its goal, its
// queries, and the report it sends its goal (signal `agentReport`, ./goal.ts).
import { defineQuery, defineSignal } from '@temporalio/workflow';
import { z } from 'zod';
import { turnLimitsSchema, usageSchema } from '../../machines/budget';
import { limitKindSchema } from '../../machines/tool-result';
// The policy's schema from its own module (not machines/policy/index.ts: see ./session.ts).
import { PolicyConfig } from '../../machines/policy/config';
import type { GoalLogEntry } from '../log-entries';
import { lazySchema } from '../../machines/lazy-schema';
import type { approveSchema, denySchema, PendingApproval, transcriptQuerySchema } from './controls';
import { absolutePath, activityOverrides, backoff, positiveInt, thinking, workspaceHost } from './option-fields';
import { toolEntrySchema } from './tool-entry';
import { delegationSchema } from './sub-agents';

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
  /** The host whose disk holds the workspace (GoalOptions.workspaceHost). */
  workspaceHost: workspaceHost.optional(),
  workspaceHostWaitMs: positiveInt.optional(),
  storeDir: z.string().min(1),
  /** The identity of the goal's conversation store: every model call is checked against it. */
  storeId: z.string().min(1).max(200).optional(),
  model: z.string().min(1),
  maxTokens: positiveInt,
  /** The goal's tools without ask_user (nobody talks to a task agent directly), with finish_task. */
  tools: z.array(toolEntrySchema),
  toolsRef: z.string().nullable(),
  policy: PolicyConfig,
  headless: z.boolean(),
  /** What the goal's budget leaves when the agent starts (and the step limit). */
  limits: turnLimitsSchema,
  approvalTimeoutMs: positiveInt.nullable(),
  maxParallelTools: positiveInt,
  retryBackoffMs: backoff,
  modelActivity: activityOverrides,
  /** The goal's secret for this agent: its reports carry it, so the goal can tell them from forgeries. Absent only in agents started before goals issued tokens (their reports are then refused). */
  reportToken: z.string().min(1).optional(),
  /** What earlier attempts at this task did (files, commands and exit codes, how they ended). */
  earlierAttempts: z.string().optional(),
  /** Extended thinking for this agent's role (GoalOptions.thinking). */
  thinking: thinking.optional(),
  /** Started by an `agent` call of a session or another agent, not by a goal (./sub-agents.ts). */
  delegation: delegationSchema.optional(),
  /** The prompt cache's lifetime its parent session chose (a fork then writes and reads its parent's entries with the same TTL). */
  promptCacheTtl: z.enum(['5m', '1h']).optional(),
  /** Set by a goal started with checkpoints: the agent checkpoints the workspace when it ends (./goal-fork.ts). */
  checkpoint: agentCheckpointInputSchema.optional(),
}));
/** What a goal gives a task agent so it checkpoints the workspace when it ends (the session's checkpoint activity). */
export const agentCheckpointInputSchema = lazySchema(() =>
  z.strictObject({
    /** The goal's last checkpoint (the new one records what changed since). */
    previous: z.string().regex(/^[0-9a-f]{64}$/).nullable(),
    limits: z.strictObject({ maxFileBytes: positiveInt, maxBytes: positiveInt, maxFiles: positiveInt, maxScanMs: positiveInt }),
    /** New content the goal's checkpoints hold already (the budget's use). */
    usedBytes: z.number().int().nonnegative(),
  }),
);
export type AgentCheckpointInput = z.output<typeof agentCheckpointInputSchema>;

/** The checkpoint a task agent took at its end (in its result). */
export interface AgentCheckpoint {
  manifest: string | null;
  head: string | null;
  changed: number;
  removed: number;
  storedBytes: number;
  skipped: { path: string; reason: string }[];
  incomplete: string | null;
  error: string | null;
}

/** What a goal starts a task agent with: the schema's output (the goal resolved every default but one: workflows/agent.ts). */
export type AgentInput = z.output<typeof agentInputSchema>;

/** The approvals a task agent takes, forwarded by its goal (signals only: the goal's updates answer). */
export const agentApproveSignal = defineSignal<[z.input<typeof approveSchema>]>('approve');
export const agentDenySignal = defineSignal<[z.input<typeof denySchema>]>('deny');
/** Every signal name a task agent takes (from its goal). */
/** Guidance for a sub-agent's running turn, forwarded by its parent session (`steer` with `agent`). */
export const agentSteerSignal = defineSignal<[unknown]>('steer');
export const AGENT_SIGNALS = [agentApproveSignal.name, agentDenySignal.name, agentSteerSignal.name];
export const agentPendingApprovalsQuery = defineQuery<PendingApproval[]>('pendingApprovals');
/** The agent's own log by query, as the goal's (its tool calls and their results). */
export const agentEventsQuery = defineQuery<{ firstAvailable: number; entries: GoalLogEntry[] }, [z.input<typeof transcriptQuerySchema>?]>('events');

/** Evidence of one task attempt. */
export const taskEvidenceSchema = lazySchema(() => z.strictObject({
  filesChanged: z.array(z.string()).max(10_000),
  commands: z
    .array(z.strictObject({ command: z.string(), exitCode: z.number().int().nullable(), status: z.string(), refused: z.string().max(200).optional(), limit: limitKindSchema.optional() }))
    .max(10_000),
  summary: z.string().nullable(),
}));
export type TaskEvidence = z.infer<typeof taskEvidenceSchema>;

const pendingApprovalSchema = lazySchema(() => z.strictObject({
  callId: z.string().min(1),
  name: z.string().min(1),
  input: z.json(),
  reason: z.string().nullable(),
  turnId: z.string().min(1),
  /** A call of the agent's own sub-agent (./sub-agents.ts), passed up to the session. */
  agent: z.strictObject({ agentId: z.string().min(1), label: z.string().min(1), parentCallId: z.string().min(1) }).optional(),
}));

/**
 * What a task agent tells its goal (signal `agentReport`): cumulative usage, its waiting
 * calls and the evidence so far. `token` is the secret the goal gave this agent at start
 * (see workflows/goal.ts, "reports"): a report without it is recorded and ignored.
 */
export const agentReportSchema = lazySchema(() => z.strictObject({
  agentId: z.string().min(1),
  taskId: z.string().min(1),
  attempt: z.number().int().positive(),
  token: z.string().min(1),
  usage: usageSchema,
  pendingApprovals: z.array(pendingApprovalSchema).max(1_000),
  evidence: taskEvidenceSchema.optional(),
}));
export type AgentReport = z.infer<typeof agentReportSchema>;
