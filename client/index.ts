// The Keel client SDK: start, drive and follow goals and sessions from a program.
export { KeelClient, DEFAULT_TASK_QUEUE, type KeelClientOptions, type StartGoalOptions, type StartSessionOptions, type ListOptions, type ListEntry } from './keel-client';
export { GoalHandle } from './goal-handle';
export type { MoveHostOptions, MoveHostReport, MovedRun } from './host-move';
export { SessionHandle, type TurnOutcome } from './session-handle';
export { followStream, type EventsOptions, type StreamItem, type GoalStreamItem, type SessionStreamItem, type ModelStreamEvent } from './events';
export { KeelError, UpdateRejectedError, NotFoundError, ConnectionError, NoAnswerError, WorkflowEndedError, InvalidInputError } from './errors';
export type {
  GoalStateView,
  PlanView,
  GoalUsageView,
  GoalPendingApproval,
  GoalLogEntry,
  StateView,
  UsageView,
  PendingApproval,
  LogEntry,
  ControlResult,
  GoalControlResult,
  UserMessageResult,
  ApprovalResult,
} from '../workflows/definitions';
export type { GoalOptions, GoalResult } from '../workflows/goal';
export type { SessionOptions, SessionResult } from '../workflows/session';
