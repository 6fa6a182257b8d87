// What the session's and the goal's event logs hold besides the machines' events, and the
// shape of one entry (re-exported by workflows/definitions.ts).
import type { Json, LogEvent } from '../machines/index';

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
