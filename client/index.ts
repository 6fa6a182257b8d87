// The Keel client SDK: start, drive and follow goals and sessions from a program.
export { KeelClient, DEFAULT_TASK_QUEUE, type KeelClientOptions, type StartGoalOptions, type StartSessionOptions, type ListOptions, type ListEntry } from './keel-client';
export { GoalHandle } from './goal-handle';
// Goal forks (docs/fork-and-rewind.md "Goals"): KeelClient.forkGoal's request and answer; a refusal is a CheckpointError.
export type { GoalForkResult } from './goal-fork';
export type { GoalForkRequest } from '../workflows/protocol/goal-fork';
export { CheckpointError } from './checkpoints';
export type { MoveHostOptions, MoveHostReport, MovedRun } from './host-move';
export { SessionHandle, type TurnOutcome } from './session-handle';
export { followStream, type EventsOptions, type StreamItem, type GoalStreamItem, type SessionStreamItem, type ModelStreamEvent } from './events';
export { KeelError, UpdateRejectedError, NotFoundError, ConnectionError, NoAnswerError, WorkflowEndedError, InvalidInputError, IdempotencyKeyReusedError } from './errors';
export { KeelSchedules, KeelSchedule, NoScheduleError, ScheduleExistsError, type CreateScheduleOptions, type ScheduleView, type ScheduleDetails, type ScheduleSpend, type ScheduleRun } from './schedules';
export type { ScheduleSpec, ScheduleSpecInput, ScheduleWhen, OverlapPolicy, CalendarEntry } from '../workflows/protocol/schedule';
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
export type { GoalResult } from '../workflows/goal';
export type { SessionResult } from '../workflows/session';
// The options are their schemas' input (workflows/protocol/).
export type { GoalOptions } from '../workflows/protocol/goal';
export type { SessionOptions } from '../workflows/protocol/session';
