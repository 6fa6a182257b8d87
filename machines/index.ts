// The pure state machines. Each is a `Machine` (core.ts): `transition(state, event)` →
// `{ ok, state, directives } | { ok: false, error }`, its transition table, `canTransition`,
// `isTerminal`, `toJSON`/`fromJSON`, `parseEvent`. Runners (workflows/) hold the states,
// apply events and execute the directives; nothing here does I/O, reads the clock or
// imports Temporal (the linter enforces it).
export {
  createCounters,
  MachineStateError,
  observe,
  transitionKey,
  type EventParse,
  type Json,
  type Machine,
  type Observer,
  type TableRow,
  type TransitionCounts,
  type TransitionError,
  type TransitionErrorCode,
  type TransitionResult,
} from './core';
export {
  addCallUsage,
  findExhaustion,
  NO_LIMITS,
  remainingForTurn,
  ZERO_USAGE,
  type BudgetLimits,
  type BudgetPatch,
  type CallUsage,
  type Exhaustion,
  type LimitName,
  type TurnLimits,
  type Usage,
} from './budget';
export { conversationProblems, messageSchema, type ContentBlock, type Message } from './conversation';
export type { CancelActivity, CancelTimer, StartTimer } from './directives';
export { KEEL_KINDS, SPEC_KINDS, type LogEvent, type LogKind, type LogPayloads, type SessionStats, type ToolResultStatus } from './events';
export {
  createToolCall,
  toolCallMachine,
  type NewToolCall,
  type ToolCallDirective,
  type ToolCallEvent,
  type ToolCallState,
  type CallResult,
} from './tool-call';
export {
  createTurn,
  pendingApprovals,
  turnMachine,
  type NewTurn,
  type ToolStats,
  type TurnConfig,
  type TurnDirective,
  type TurnEvent,
  type TurnResult,
  type TurnState,
} from './turn';
export { COMPLETE_REASONS, TURN_OUTCOMES, type CompleteReason, type TurnEnd } from './turn/outcome';
export {
  createSession,
  DEFAULT_MAX_CONSECUTIVE_ERRORS,
  exhaustionOf as sessionExhaustion,
  sessionEventFromTurn,
  statsOf as sessionStats,
  sessionMachine,
  type NewSession,
  type SessionDirective,
  type SessionEvent,
  type SessionState,
} from './session';
export {
  createGoal,
  goalMachine,
  planOf,
  type GoalConfig,
  type GoalDirective,
  type GoalEvent,
  type GoalReport,
  type GoalState,
  type NewGoal,
  type Review,
} from './autonomy';
export { planProblems, readyTasks, type Task, type TaskInput } from './task-graph';
export { createStream, streamMachine, type StreamDirective, type StreamEvent, type StreamState } from './stream';
