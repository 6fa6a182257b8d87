// The session's messages in and out: signals, updates and queries, with the zod schemas
// their JSON payloads must satisfy (workflows/control-schemas.ts). Payloads are simple enough to type by hand into
// `temporal workflow signal --name approve --input '{"callId":"toolu_…"}'`. Every signal
// that a caller may want an answer to also exists as an update of the same name, whose
// synchronous validator rejects with the machine's reason.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { hostMoveSchema, HostMoveFiles } from '../machines/host-move';
import { z } from 'zod';
import type { ClientToolCall, ClientToolResultInput } from './client-tools';
import type { PolicyConfig, PolicyOrigin } from '../machines/policy';
import type { FinishedTurn } from './finished-turns';
import type { BudgetLimits, Json, Message, SessionState, SessionStats, TransitionCounts, TurnState, Usage } from '../machines/index';
import type { AnswerInput, ApproveInput, DenyInput, RaiseBudgetInput, ReasonInput, SteerInput, TranscriptQueryInput, UserMessageInput } from './control-schemas';
import type { LogEntry } from './log-entries';
import { lazySchema } from '../machines/lazy-schema';

export * from './control-schemas';
export * from './log-entries';
export * from './goal-definitions';

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
export const awaitTurnSchema = lazySchema(() => z.strictObject({ messageId: z.string().min(1).max(500) }));
export type AwaitTurnInput = z.input<typeof awaitTurnSchema>;
/** The turn that answered the message, or `moved`: the session is continuing as new, ask the next run. */
export type AwaitTurnResult = ({ kind: 'finished' } & FinishedTurn) | { kind: 'moved' };
export const awaitTurnUpdate = defineUpdate<AwaitTurnResult, [AwaitTurnInput]>('awaitTurn');
/** `send`: the message posted and its turn awaited in one update; `moved` names the message to await in the next run. */
export type SendMessageResult = ({ kind: 'finished' } & FinishedTurn) | { kind: 'moved'; messageId: string };
export const sendMessageUpdate = defineUpdate<SendMessageResult, [UserMessageInput]>('sendMessage');

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
