// What the session's and the goal's event logs hold besides the machines' events, and the
// shape of one entry (re-exported by workflows/definitions.ts).
import type { Json, LogEvent } from '../machines/index';
import type { InfraService } from '../machines/infra-retry';
import type { HostMoveFiles } from '../machines/host-move';
import type { CheckpointLogEvent, GoalForkedEvent } from './checkpoint-events';

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

/**
 * The run waits for its infrastructure (machines/infra-retry.ts): a transient failure of
 * the conversation store or a workspace host. Logged at the first failed try and at the
 * 2nd, 4th, 8th… (the state view shows every try); `message` is what the console and the
 * CLI show: "waiting for the conversation store (…) since 12:03:07 UTC, 14 tries: …".
 */
export interface InfraWaitingEvent {
  kind: 'infra.waiting';
  service: InfraService;
  target: string;
  since: string;
  tries: number;
  error: string;
  message: string;
}
/** What it waited for answered again: the call went on from where it was. */
export interface InfraRecoveredEvent {
  kind: 'infra.recovered';
  service: InfraService;
  target: string;
  tries: number;
  waitedMs: number;
}

/**
 * An operator moved the run's workspace to another host (`keel host move`, machines/host-move.ts).
 * `files: lost`: the message says the workspace was lost in the move and the run goes on in
 * an empty one — what a human must know before trusting anything the agent reports of it.
 */
export interface WorkspaceMovedEvent {
  kind: 'workspace.moved';
  moveId: string;
  workspace: string;
  from: string;
  to: string;
  files: HostMoveFiles;
  source?: string;
  copied: number;
  message: string;
}

/** What the session adds to the machines' events in its log. */
export type RunnerEvent = RejectedEvent | CompactedEvent | RepairedEvent | InfraWaitingEvent | InfraRecoveredEvent | WorkspaceMovedEvent | CheckpointLogEvent;

/** One entry of the `events` topic. */
export type LogEntry = (LogEvent | RunnerEvent) & { seq: number; at: string; sessionId: string };

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
export type GoalRunnerEvent = RunnerEvent | AgentApprovalRequestedEvent | AgentApprovalAnsweredEvent | GoalForkedEvent;

/** One entry of a goal's or agent's `events` topic. */
export type GoalLogEntry = (LogEvent | GoalRunnerEvent) & { seq: number; at: string; workflowId: string };
