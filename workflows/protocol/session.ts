// A session's protocol: what it is started with (its options, whose type is the schema's
// input), and its messages in and out — signals, updates and queries, each typed by the
// schema its JSON payload must satisfy (./controls.ts), so a client sends what the workflow
// parses. Payloads are simple enough to type by hand into
// `temporal workflow signal --name approve --input '{"callId":"toolu_…"}'`. Every signal
// that a caller may want an answer to also exists as an update of the same name, whose
// synchronous validator rejects with the machine's reason.
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import { z } from 'zod';
import type { hostMoveSchema, HostMoveFiles } from '../../machines/host-move';
import type { ClientToolCall, clientToolResultSchema } from '../client-tools';
import type { FinishedTurn } from '../finished-turns';
import type { BudgetLimits, Message, SessionState, SessionStats, TransitionCounts, TurnState, Usage } from '../../machines/index';
import { budgetLimitsSchema } from '../../machines/budget';
// The policy's schema from its own module: machines/policy/index.ts brings the rule matching
// (picomatch), which must not be among the preloaded modules (worker/workflow-bundle.ts).
import { PolicyConfig } from '../../machines/policy/config';
import type { LogEntry } from '../log-entries';
import { lazySchema } from '../../machines/lazy-schema';
import { absolutePath, activityOverrides, backoff, positiveInt, thinkingBudget, timeoutMs, workspaceHost } from './option-fields';
import {
  answerSchema,
  approveSchema,
  denySchema,
  noPayloadSchema,
  raiseBudgetSchema,
  reasonSchema,
  steerSchema,
  userMessageSchema,
  type PendingApproval,
  type PolicyView,
  type transcriptQuerySchema,
} from './controls';
import { controlNames, defineControl } from './control';
import { checkpointsOptionSchema, forkOfSchema } from './checkpoints';
import { subAgentOptionsSchema } from './sub-agents';

/** A session's thinking: a budget (and, with `interleaved`, thinking between tool calls too), or `adaptive` (the model decides). */
const sessionThinking = lazySchema(() => z.union([z.strictObject({ budgetTokens: thinkingBudget, interleaved: z.boolean().optional() }), z.strictObject({ adaptive: z.literal(true) })]));

/**
 * A session's options: the workflow parses its input with this first thing (invalid input
 * fails the run at once, non-retryable, naming the field) and the client SDK before it starts
 * anything. Defaults are applied once, by workflows/session-options.ts.
 */
export const sessionOptionsSchema = lazySchema(() => z.strictObject({
  /** Absolute path of the directory the tools work in. */
  workspace: absolutePath('workspace'),
  /**
   * The host whose disk holds the workspace (not shared): its setup, tools and MCP calls run
   * on the worker started there with KEEL_WORKSPACE_HOST=<name> (workflows/workspace-host.ts).
   * Unset: any worker (a shared workspace). The client sets it from its own KEEL_WORKSPACE_HOST.
   */
  workspaceHost: workspaceHost.optional(),
  /** How long a call waits for the workspace host before it fails as "not polling" (default 60 s). */
  workspaceHostWaitMs: positiveInt.optional(),
  /** The model of every turn (default claude-sonnet-4-6, DEFAULT_MODEL). */
  model: z.string().min(1).optional(),
  /** A call's output limit (default 4096, DEFAULT_MAX_TOKENS); a truncated answer may raise it (workflows/turn-config.ts). */
  maxTokens: positiveInt.optional(),
  system: z.string().optional(),
  /** Over the workspace's .keel/policy.json: mode (read-only | ask | auto-edit | full-auto), allow/ask/deny rules. */
  policy: PolicyConfig.optional(),
  /** No human will answer: `ask` becomes the policy's headless choice (default false). */
  headless: z.boolean().optional(),
  /** The session's budget; a limit not named is none (default: no limits). */
  limits: budgetLimitsSchema.partial().optional(),
  /** Failed turns in a row before the session stops (default 3, DEFAULT_MAX_CONSECUTIVE_ERRORS). */
  maxConsecutiveErrors: positiveInt.optional(),
  /** How long a tool call waits for approval (default null: forever). */
  approvalTimeoutMs: timeoutMs,
  /** How long an idle session waits for a message before it closes (default null: forever). */
  idleTimeoutMs: timeoutMs,
  /** Read-only tool calls of one step run side by side up to this many (default 4). */
  maxParallelTools: positiveInt.max(64).optional(),
  /** Shorter waits between a turn's model retries than the retry table's (tests): it can lower the retries, never raise them. Absent: the table's turn rows (machines/model-retry.ts). */
  retryBackoffMs: backoff,
  /** Offer the tools of the worker's MCP servers (KEEL_MCP_CONFIG; default false). */
  mcp: z.boolean().optional(),
  /** Conversation store directory; default `<workspace>/.keel/store` (the worker's KEEL_STORE_DIR wins). */
  storeDir: absolutePath('storeDir').optional(),
  /** Continue as new after this many turns in one run (default null: only when suggested). */
  continueAsNewAfterTurns: positiveInt.nullable().optional(),
  /** Continue as new when the server suggests it (history size or length); default true. */
  continueAsNewWhenSuggested: z.boolean().optional(),
  /** Continue as new once a run's history holds this many events, at the next quiet point (tests force it; default null: when suggested, or after continueAsNewAfterTurns). */
  continueAsNewAfterEvents: positiveInt.min(20).nullable().optional(),
  /** Overrides of the model activity's options (tests shorten retries). */
  modelActivity: activityOverrides,
  /**
   * Summarize older turns when the conversation exceeds this many tokens, measured by the
   * last response's input_tokens; default 80 % of the model's context window (applied by the
   * model activity, which knows the window).
   */
  compactAboveTokens: positiveInt.optional(),
  /**
   * Extended thinking: up to `budgetTokens` of thinking per call, on top of maxTokens
   * (`interleaved`: between tool calls too); or `{ adaptive: true }`: the model decides.
   */
  thinking: sessionThinking.optional(),
  /** Prompt caching (default true, applied by the model activity: activities/llm-cache.ts). */
  promptCaching: z.boolean().optional(),
  /** `1h` keeps the cache across a wait on people longer than 5 minutes (writes cost 2× input instead of 1.25×); absent: the API's 5 minutes. */
  promptCacheTtl: z.enum(['5m', '1h']).optional(),
  /** Set by Keel's clients when they hold the encryption keys: a control that names nothing
   *  (resume, stop, reset, restart, approvePlan) must then carry its empty argument, which the
   *  encryption authenticates; one sent with no payload at all proves nothing and is refused (default false). */
  authenticatedControls: z.boolean().optional(),
  /** Workspace checkpoints at every turn boundary, for fork and rewind (docs/fork-and-rewind.md; default false). */
  checkpoints: checkpointsOptionSchema.optional(),
  /** Set by `fork`: the session and turn this one starts from (its workspace is laid out from that turn's checkpoint). */
  forkOf: forkOfSchema.optional(),
  /** Offer the `agent` tool: the model delegates to child agents (caps, named types; docs/sub-agents.md). Absent: no sub-agents. */
  agents: subAgentOptionsSchema.optional(),
}));
/** What a session is started with: the schema's input (defaults are filled in by workflows/session-options.ts). */
export type SessionOptions = z.input<typeof sessionOptionsSchema>;

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
export const awaitTurnSchema = lazySchema(() => z.strictObject({ messageId: z.string().min(1).max(500) }));
export type AwaitTurnInput = z.input<typeof awaitTurnSchema>;
/** The turn that answered the message, or `moved`: the session is continuing as new, ask the next run. */
export type AwaitTurnResult = ({ kind: 'finished' } & FinishedTurn) | { kind: 'moved' };
export const awaitTurnUpdate = defineUpdate<AwaitTurnResult, [AwaitTurnInput]>('awaitTurn');
/** `send`: the message posted and its turn awaited in one update; `moved` names the message to await in the next run. */
export type SendMessageResult = ({ kind: 'finished' } & FinishedTurn) | { kind: 'moved'; messageId: string };
export const sendMessageUpdate = defineUpdate<SendMessageResult, [z.input<typeof userMessageSchema>]>('sendMessage');

/**
 * An operator moved the run's workspace host (`keel host move`, machines/host-move.ts): sent
 * to every running session, goal and agent; refused (`not_on_host`, `shared_workspace`) by the
 * runs whose workspace is elsewhere, so a refusal there changes nothing and records nothing.
 */
export type MoveWorkspaceHostInput = z.input<typeof hostMoveSchema>;
export interface MoveWorkspaceHostResult {
  /** `moved`: from now on its calls go to the new host; `already_there`: the same move was applied before. */
  outcome: 'moved' | 'already_there';
  host: string;
  workspace: string;
  files: HostMoveFiles;
  /** What the run's log says (the `workspace.moved` event's message). */
  message: string;
}
export const moveWorkspaceHostUpdate = defineUpdate<MoveWorkspaceHostResult, [MoveWorkspaceHostInput]>('moveWorkspaceHost');

/**
 * The session's controls, each a signal and an update of one name typed by its payload's
 * schema (./control.ts). Signals are fire-and-forget: one the session cannot take now is
 * recorded in the event log as `event.rejected`, never dropped silently; the update of the
 * same name answers, and its validator rejects with the machine's reason. Keel's clients send
 * `{}` to a control that names nothing (encryption authenticates it: workflows/payloads.ts).
 */
export const SESSION_CONTROLS = {
  userMessage: defineControl<UserMessageResult>()('userMessage', userMessageSchema),
  approve: defineControl<ApprovalResult>()('approve', approveSchema),
  deny: defineControl<ControlResult>()('deny', denySchema),
  interrupt: defineControl<ControlResult>()('interrupt', reasonSchema),
  steer: defineControl<ControlResult>()('steer', steerSchema),
  pause: defineControl<ControlResult>()('pause', reasonSchema),
  resume: defineControl<ControlResult>()('resume', noPayloadSchema),
  stop: defineControl<ControlResult>()('stop', noPayloadSchema),
  reset: defineControl<ControlResult>()('reset', noPayloadSchema),
  restart: defineControl<ControlResult>()('restart', noPayloadSchema),
  raiseBudget: defineControl<ControlResult>()('raiseBudget', raiseBudgetSchema),
  answer: defineControl<ControlResult>()('answer', answerSchema),
  close: defineControl<ControlResult>()('close', reasonSchema),
};
/** Every signal (and update) name a session takes; others are recorded as `event.rejected`. */
export const SESSION_SIGNALS = controlNames(SESSION_CONTROLS);

export const userMessageSignal = SESSION_CONTROLS.userMessage.signal;
export const approveSignal = SESSION_CONTROLS.approve.signal;
export const denySignal = SESSION_CONTROLS.deny.signal;
export const interruptSignal = SESSION_CONTROLS.interrupt.signal;
export const steerSignal = SESSION_CONTROLS.steer.signal;
export const pauseSignal = SESSION_CONTROLS.pause.signal;
export const resumeSignal = SESSION_CONTROLS.resume.signal;
export const stopSignal = SESSION_CONTROLS.stop.signal;
export const resetSignal = SESSION_CONTROLS.reset.signal;
export const restartSignal = SESSION_CONTROLS.restart.signal;
export const raiseBudgetSignal = SESSION_CONTROLS.raiseBudget.signal;
export const answerSignal = SESSION_CONTROLS.answer.signal;
export const closeSignal = SESSION_CONTROLS.close.signal;

export const userMessageUpdate = SESSION_CONTROLS.userMessage.update;
export const approveUpdate = SESSION_CONTROLS.approve.update;
export const denyUpdate = SESSION_CONTROLS.deny.update;
export const interruptUpdate = SESSION_CONTROLS.interrupt.update;
export const steerUpdate = SESSION_CONTROLS.steer.update;
export const pauseUpdate = SESSION_CONTROLS.pause.update;
export const resumeUpdate = SESSION_CONTROLS.resume.update;
export const stopUpdate = SESSION_CONTROLS.stop.update;
export const resetUpdate = SESSION_CONTROLS.reset.update;
export const restartUpdate = SESSION_CONTROLS.restart.update;
export const raiseBudgetUpdate = SESSION_CONTROLS.raiseBudget.update;
export const answerUpdate = SESSION_CONTROLS.answer.update;
export const closeUpdate = SESSION_CONTROLS.close.update;
/** The result of a client tool call (workflows/client-tools.ts): the turn goes on with it. An update only. */
export const clientToolResultUpdate = defineUpdate<ControlResult, [z.input<typeof clientToolResultSchema>]>('clientToolResult');

export interface UsageView {
  usage: Usage;
  limits: BudgetLimits;
  turns: number;
  toolCalls: SessionStats['toolCalls'];
  /** The first exhausted limit, if any. */
  /** `next`: the worst case of the call that was not made (it could cross the limit). */
  exhaustion: { limit: string; allowed: number; used: number; over: number; next?: number } | null;
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
  /** What the session waits for, in words, while its store or workspace host is away (machines/infra-retry.ts); null when nothing. */
  waiting?: string | null;
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
export const eventsQuery = defineQuery<EventsPage, [z.input<typeof transcriptQuerySchema>?]>('events');
export const transcriptQuery = defineQuery<TranscriptPage, [z.input<typeof transcriptQuerySchema>?]>('transcript');
export const pendingApprovalsQuery = defineQuery<PendingApproval[]>('pendingApprovals');
export const usageQuery = defineQuery<UsageView>('usage');

/** Transition counts per machine (session, turn, autonomy), counted by the host's observers since the workflow started (carried across continue-as-new). */
export interface MetricsView {
  machines: Record<string, TransitionCounts>;
}
/** Sessions, goals and agents answer it alike. */
export const metricsQuery = defineQuery<MetricsView>('metrics');

