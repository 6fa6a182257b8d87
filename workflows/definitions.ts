// The session's messages in and out: signals, updates and queries, with the zod schemas
// their JSON payloads must satisfy. Payloads are simple enough to type by hand into
// `temporal workflow signal --name approve --input '{"callId":"toolu_…"}'`. Every signal
// that a caller may want an answer to also exists as an update of the same name, whose
// synchronous validator rejects with the machine's reason.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { z } from 'zod';
import { clientToolsSchema, type ClientTool, type ClientToolCall, type ClientToolResultInput } from './client-tools';
import { usageSchema } from '../machines/budget';
import { limitKindSchema } from '../machines/tool-result';
import type { PolicyConfig, PolicyOrigin } from '../machines/policy';
import type { FinishedTurn } from './finished-turns';
import type { BudgetLimits, BudgetPatch, GoalState, Json, LogEvent, Message, SessionState, SessionStats, Task, TransitionCounts, TurnState, Usage } from '../machines/index';

const text = z.string().trim().min(1, 'text must not be empty');
/** What a goal keeps in its state (feedback, a task's new instructions) travels in every
 *  continue-as-new input, one payload under the server's 2 MB limit: bounded here. */
export const GOAL_TEXT_MAX = 100_000;
const goalText = text.max(GOAL_TEXT_MAX, 'at most 100,000 characters (put longer material in a file in the workspace)');
const optionalObject = <T extends z.ZodRawShape>(shape: T) => z.strictObject(shape).optional();

export const userMessageSchema = z.union([
  text.transform((t) => ({ text: t, messageId: undefined as string | undefined, clientTools: undefined as ClientTool[] | undefined })),
  // clientTools: tools the sender runs itself, offered in this message's turn (workflows/client-tools.ts).
  z.strictObject({ text, messageId: z.string().min(1).optional(), clientTools: clientToolsSchema.optional() }),
]);
export const approveSchema = z.strictObject({
  callId: z.string().min(1),
  scope: z.enum(['once', 'session']).optional(),
  approver: z.string().min(1).optional(),
  /** With scope `session`: a policy rule to remember instead of the exact call, e.g. `run_command(npm test*)`. */
  rule: z.string().min(1).optional(),
  /** Set by the worker's codec: true only when a Keel client signed the approver (worker/approver-proof.ts). */
  proven: z.boolean().optional(),
});
export const denySchema = z.strictObject({ callId: z.string().min(1), reason: z.string().min(1).optional() });
export const reasonSchema = optionalObject({ reason: z.string().min(1).optional() }).or(z.null().transform(() => undefined));
export const steerSchema = z.union([text.transform((t) => ({ text: t })), z.strictObject({ text })]);
export const answerSchema = z.union([z.string().transform((t) => ({ text: t })), z.strictObject({ text: z.string() })]);
const limit = (schema: z.ZodType<number>) => schema.nullable().optional();
/** Limits to raise (or remove with null): `{"outputTokens": 20000, "turns": 50}`. */
export const raiseBudgetSchema = z.strictObject({
  inputTokens: limit(z.number().int().nonnegative()),
  outputTokens: limit(z.number().int().nonnegative()),
  costUsd: limit(z.number().nonnegative()),
  stepsPerTurn: limit(z.number().int().positive()),
  turns: limit(z.number().int().positive()),
  wallClockMs: limit(z.number().int().positive()),
});
export const noPayloadSchema = z.union([z.undefined(), z.null(), z.strictObject({})]);
/** The argument of a control that names nothing: Keel's clients send `{}`, which encryption
 *  authenticates (workflows/payloads.ts `parseBareControl`). */
export type BareControlInput = Record<string, never>;
export const transcriptQuerySchema = z
  .strictObject({ from: z.number().int().nonnegative().optional(), limit: z.number().int().positive().max(500).optional() })
  .optional();

export type UserMessageInput = z.input<typeof userMessageSchema>;
export type ApproveInput = z.input<typeof approveSchema>;
export type DenyInput = z.input<typeof denySchema>;
export type ReasonInput = z.input<typeof reasonSchema>;
export type SteerInput = z.input<typeof steerSchema>;
export type AnswerInput = z.input<typeof answerSchema>;
export type RaiseBudgetInput = BudgetPatch;
export type TranscriptQueryInput = z.input<typeof transcriptQuerySchema>;

// Signals: fire-and-forget; a signal the session cannot take now is recorded in the event
// log as `event.rejected`, never dropped silently.
export const userMessageSignal = defineSignal<[UserMessageInput]>('userMessage');
export const approveSignal = defineSignal<[ApproveInput]>('approve');
export const denySignal = defineSignal<[DenyInput]>('deny');
export const interruptSignal = defineSignal<[ReasonInput]>('interrupt');
export const steerSignal = defineSignal<[SteerInput]>('steer');
export const pauseSignal = defineSignal<[ReasonInput]>('pause');
export const resumeSignal = defineSignal<[]>('resume');
export const stopSignal = defineSignal<[]>('stop');
export const resetSignal = defineSignal<[]>('reset');
export const restartSignal = defineSignal<[]>('restart');
export const raiseBudgetSignal = defineSignal<[RaiseBudgetInput]>('raiseBudget');
export const answerSignal = defineSignal<[AnswerInput]>('answer');
export const closeSignal = defineSignal<[ReasonInput]>('close');
/** Every signal (and update) name a session takes; others are recorded as `event.rejected`. */
export const SESSION_SIGNALS = ['userMessage', 'approve', 'deny', 'interrupt', 'steer', 'pause', 'resume', 'stop', 'reset', 'restart', 'raiseBudget', 'answer', 'close'] as const;

/** What an accepted update answers: the session's status afterwards. */
export interface ControlResult {
  status: SessionState['status'];
}
export interface UserMessageResult extends ControlResult {
  messageId: string;
  /** True when a turn was running (or the session could not start one): the message waits. */
  queued: boolean;
  queueLength: number;
}
export interface ApprovalResult extends ControlResult {
  callId: string;
  /**
   * What was remembered for the rest of the session, when scope was `session`: the rule
   * the human gave, or `exactly <tool> <input JSON>` for the exact call.
   */
  sessionRule: string | null;
}

/** `send`'s wait for its own message's turn, by message id (one update, not a stream follow). */
export const awaitTurnSchema = z.strictObject({ messageId: z.string().min(1).max(500) });
export type AwaitTurnInput = z.input<typeof awaitTurnSchema>;
/** The turn that answered the message, or `moved`: the session is continuing as new, ask the next run. */
export type AwaitTurnResult = ({ kind: 'finished' } & FinishedTurn) | { kind: 'moved' };
export const awaitTurnUpdate = defineUpdate<AwaitTurnResult, [AwaitTurnInput]>('awaitTurn');

// Updates: the same operations with an answer; validators reject with a specific reason.
export const userMessageUpdate = defineUpdate<UserMessageResult, [UserMessageInput]>('userMessage');
/** The result of a client tool call (workflows/client-tools.ts): the turn goes on with it. */
export const clientToolResultUpdate = defineUpdate<ControlResult, [ClientToolResultInput]>('clientToolResult');
export const approveUpdate = defineUpdate<ApprovalResult, [ApproveInput]>('approve');
export const denyUpdate = defineUpdate<ControlResult, [DenyInput]>('deny');
export const interruptUpdate = defineUpdate<ControlResult, [ReasonInput]>('interrupt');
export const steerUpdate = defineUpdate<ControlResult, [SteerInput]>('steer');
export const pauseUpdate = defineUpdate<ControlResult, [ReasonInput]>('pause');
export const resumeUpdate = defineUpdate<ControlResult, []>('resume');
export const stopUpdate = defineUpdate<ControlResult, []>('stop');
export const resetUpdate = defineUpdate<ControlResult, []>('reset');
export const restartUpdate = defineUpdate<ControlResult, []>('restart');
export const raiseBudgetUpdate = defineUpdate<ControlResult, [RaiseBudgetInput]>('raiseBudget');
export const answerUpdate = defineUpdate<ControlResult, [AnswerInput]>('answer');
export const closeUpdate = defineUpdate<ControlResult, [ReasonInput]>('close');

export interface PendingApproval {
  callId: string;
  name: string;
  input: Json;
  reason: string | null;
  turnId: string;
}

export interface UsageView {
  usage: Usage;
  limits: BudgetLimits;
  turns: number;
  toolCalls: SessionStats['toolCalls'];
  /** The first exhausted limit, if any. */
  exhaustion: { limit: string; allowed: number; used: number; over: number } | null;
  /** The running turn's usage, not yet added to `usage`. */
  turnUsage: Usage | null;
  /** The newest finished turns (up to 100, oldest first): each one's tokens and cost (absent in runs recorded before it). */
  perTurn?: TurnUsage[];
}

export interface TurnUsage {
  turnId: string;
  messageId: string;
  outcome: string;
  usage: Usage | null;
}

export interface StateView {
  sessionId: string;
  status: SessionState['status'];
  /** Why the session is paused, suspended, closing, closed or failed. */
  reason: string | null;
  session: SessionState;
  turn: { turnId: string; status: TurnState['status']; step: number | null } | null;
  queueLength: number;
  pendingApprovals: PendingApproval[];
  question: { callId: string; question: string } | null;
  /** Calls of client tools waiting for the client's result (absent in runs recorded before client tools). */
  clientToolCalls?: ClientToolCall[];
  usage: UsageView;
  /** Runs of this workflow so far (continue-as-new starts a new one). */
  run: number;
  /** Offset the next event-log entry will have (subscribe from here to follow live). */
  nextEventSeq: number;
  tools: string[];
  /** The effective policy and where each part came from (null before setup, or in a run recorded before origins). */
  policy: PolicyView | null;
}

/** The effective approval policy and its origin: start options bound it, the workspace file may only narrow. */
export interface PolicyView {
  effective: PolicyConfig;
  origin: PolicyOrigin;
}

export interface TranscriptPage {
  /** Messages in the whole conversation. */
  total: number;
  /** The first index this run still holds in memory (older ones are in the store only). */
  firstAvailable: number;
  from: number;
  messages: Message[];
  /** The conversation store's head (content-addressed segment id) for what is stored. */
  head: string | null;
  /** Turns the model refused (stop_reason `refusal`), with the API's category and explanation: they add no message. */
  refusals: { turnId: string; at: string; category: string | null; explanation: string | null }[];
}

export interface EventsPage {
  /** Offset of the first entry this run still holds (older ones were trimmed at continue-as-new). */
  firstAvailable: number;
  entries: LogEntry[];
}

export const stateQuery = defineQuery<StateView>('state');
/** The event log read by query: works on a closed session too (the stream's long-poll does not). */
export const eventsQuery = defineQuery<EventsPage, [TranscriptQueryInput?]>('events');
export const transcriptQuery = defineQuery<TranscriptPage, [TranscriptQueryInput?]>('transcript');
export const pendingApprovalsQuery = defineQuery<PendingApproval[]>('pendingApprovals');
export const usageQuery = defineQuery<UsageView>('usage');

/** Transition counts per machine (session, turn, autonomy), counted by the host's observers since the workflow started (carried across continue-as-new). */
export interface MetricsView {
  machines: Record<string, TransitionCounts>;
}
/** Sessions, goals and agents answer it alike. */
export const metricsQuery = defineQuery<MetricsView>('metrics');

/** The event-log topic (SPEC §3 events); model deltas travel on `model` (activities/llm-deltas). */
export const EVENTS_TOPIC = 'events';
export const MODEL_TOPIC = 'model';

/** An event the session could not take, recorded instead of being dropped. */
export interface RejectedEvent {
  kind: 'event.rejected';
  /** Where it came from: a signal by name, or an activity result / timer that arrived late. */
  source: string;
  machine: string;
  state: string;
  event: string;
  code: string;
  message: string;
}

/** Older turns were summarized so the conversation fits the model's context window. */
export interface CompactedEvent {
  kind: 'conversation.compacted';
  turnId: string;
  fromMessages: number;
  toMessages: number;
  fromTokens: number;
  toTokens: number;
  summaryChars: number;
}

/** The conversation store had lost or damaged a segment: the conversation was rebuilt from what the workflow holds (machines/conversation-repair.ts). */
export interface RepairedEvent {
  kind: 'conversation.repaired';
  turnId: string;
  /** What the store said: the segment, the store and the cause. */
  error: string;
  /** Turns whose user message was kept but whose replies and tool results are gone. */
  lostTurns: string[];
  lostMessages: number;
  lostUserMessages: number;
  keptMessages: number;
}

/** What the session adds to the machines' events in its log. */
export type RunnerEvent = RejectedEvent | CompactedEvent | RepairedEvent;

/** One entry of the `events` topic. */
export type LogEntry = (LogEvent | RunnerEvent) & { seq: number; at: string; sessionId: string };

// ---- goals (workflows/goal.ts) and their task agents (workflows/agent.ts) --------------
// The same names as the session where the operation is the same (`approve`, `deny`,
// `state`, `pendingApprovals`, `usage`, `events`); payloads are typed by hand as easily.

export const approvePlanSchema = noPayloadSchema;
export const rejectPlanSchema = z.union([goalText.transform((t) => ({ feedback: t })), z.strictObject({ feedback: goalText })]);
export const resolveTaskSchema = z
  .strictObject({ taskId: z.string().min(1), action: z.enum(['retry', 'skip', 'edit']), instructions: goalText.optional() })
  .refine((v) => v.action !== 'edit' || v.instructions !== undefined, { message: 'edit needs instructions', path: ['instructions'] });
export const cancelSchema = reasonSchema;

export type RejectPlanInput = z.input<typeof rejectPlanSchema>;
export type ResolveTaskInput = z.input<typeof resolveTaskSchema>;

export const approvePlanSignal = defineSignal<[]>('approvePlan');
export const rejectPlanSignal = defineSignal<[RejectPlanInput]>('rejectPlan');
export const resolveTaskSignal = defineSignal<[ResolveTaskInput]>('resolveTask');
export const cancelSignal = defineSignal<[ReasonInput]>('cancel');

/** What an accepted goal update answers: the goal's status afterwards. */
export interface GoalControlResult {
  status: GoalState['status'];
}
export const approvePlanUpdate = defineUpdate<GoalControlResult, []>('approvePlan');
export const rejectPlanUpdate = defineUpdate<GoalControlResult, [RejectPlanInput]>('rejectPlan');
export const resolveTaskUpdate = defineUpdate<GoalControlResult, [ResolveTaskInput]>('resolveTask');
export const cancelUpdate = defineUpdate<GoalControlResult, [ReasonInput]>('cancel');
export const goalApproveUpdate = defineUpdate<GoalControlResult & { callId: string; agentId: string }, [ApproveInput]>('approve');
export const goalDenyUpdate = defineUpdate<GoalControlResult & { callId: string; agentId: string }, [DenyInput]>('deny');

/** A tool call of a task agent waiting for a human, as the goal shows it. */
export interface GoalPendingApproval extends PendingApproval {
  agentId: string;
  taskId: string;
}

/** Evidence of one task attempt. */
export const taskEvidenceSchema = z.strictObject({
  filesChanged: z.array(z.string()).max(10_000),
  commands: z
    .array(z.strictObject({ command: z.string(), exitCode: z.number().int().nullable(), status: z.string(), refused: z.string().max(200).optional(), limit: limitKindSchema.optional() }))
    .max(10_000),
  summary: z.string().nullable(),
});
export type TaskEvidence = z.infer<typeof taskEvidenceSchema>;

const pendingApprovalSchema = z.strictObject({
  callId: z.string().min(1),
  name: z.string().min(1),
  input: z.json(),
  reason: z.string().nullable(),
  turnId: z.string().min(1),
});

/**
 * What a task agent tells its goal (signal `agentReport`): cumulative usage, its waiting
 * calls and the evidence so far. `token` is the secret the goal gave this agent at start
 * (see workflows/goal.ts, "reports"): a report without it is recorded and ignored.
 */
export const agentReportSchema = z.strictObject({
  agentId: z.string().min(1),
  taskId: z.string().min(1),
  attempt: z.number().int().positive(),
  token: z.string().min(1),
  usage: usageSchema,
  pendingApprovals: z.array(pendingApprovalSchema).max(1_000),
  evidence: taskEvidenceSchema.optional(),
});
export type AgentReport = z.infer<typeof agentReportSchema>;
export const agentReportSignal = defineSignal<[AgentReport]>('agentReport');
/** Every signal name a goal takes (agentReport from its own agents only). */
export const GOAL_SIGNALS = ['approvePlan', 'rejectPlan', 'resolveTask', 'cancel', 'approve', 'deny', 'agentReport'] as const;
/** Every signal name a task agent takes (from its goal). */
export const AGENT_SIGNALS = ['approve', 'deny'] as const;

export interface GoalUsageView {
  usage: Usage;
  limits: BudgetLimits;
  /** Usage of each task agent (by agent id), included in `usage`. */
  agents: Record<string, Usage>;
  exhaustion: { limit: string; allowed: number; used: number; over: number } | null;
}

export interface GoalStateView {
  goalId: string;
  status: GoalState['status'];
  /** Why it is blocked or stopped, or the summary when the goal is met. */
  reason: string | null;
  goal: GoalState;
  running: { taskId: string; agentId: string }[];
  pendingApprovals: GoalPendingApproval[];
  usage: GoalUsageView;
  nextEventSeq: number;
  /** The task agents' effective policy and where each part came from. */
  policy: PolicyView | null;
}

export interface PlanView {
  planVersion: number;
  status: GoalState['status'];
  tasks: Task[];
  evidence: Record<string, TaskEvidence>;
}

export const planQuery = defineQuery<PlanView>('plan');
export const goalStateQuery = defineQuery<GoalStateView>('state');
export const goalUsageQuery = defineQuery<GoalUsageView>('usage');
export const goalPendingApprovalsQuery = defineQuery<GoalPendingApproval[]>('pendingApprovals');
/** The goal's event log by query (works after it completed too). */
export const goalEventsQuery = defineQuery<{ firstAvailable: number; entries: GoalLogEntry[] }, [TranscriptQueryInput?]>('events');

/** A tool call of one of the goal's agents waits for a human (answer it on the goal). */
export interface AgentApprovalRequestedEvent {
  kind: 'agent.approval_requested';
  agentId: string;
  taskId: string;
  callId: string;
  toolName: string;
  input: Json;
  reason: string | null;
}
/** An approval answered through the goal, forwarded to the agent. */
export interface AgentApprovalAnsweredEvent {
  kind: 'agent.approval_answered';
  agentId: string;
  taskId: string;
  callId: string;
  decision: 'approved' | 'denied';
}
/** What the goal adds to the machines' events in its log. */
export type GoalRunnerEvent = RunnerEvent | AgentApprovalRequestedEvent | AgentApprovalAnsweredEvent;

/** One entry of a goal's or agent's `events` topic. */
export type GoalLogEntry = (LogEvent | GoalRunnerEvent) & { seq: number; at: string; workflowId: string };
