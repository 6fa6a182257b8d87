// One turn of the agent loop, one concept a file: state.ts (what a turn holds),
// protocol.ts (events, directives, result), outcome.ts (how it ends), machine.ts (the
// transition table and reducer), response.ts (the model's answer), tools.ts (a step's
// tool calls), steps.ts (calling the model, completing, failing).
export { COMPLETE_REASONS, TURN_OUTCOMES, type CompleteReason, type TurnEnd } from './outcome';
export { modelActivityId, retryTimerId, turnEventSchema, turnResultSchema, type TurnDirective, type TurnEvent, type TurnResult } from './protocol';
export { createTurn, toolStatsSchema, turnConfigSchema, turnStateSchema, ZERO_TOOL_STATS, type NewTurn, type ToolStats, type TurnConfig, type TurnState, type TurnStatus } from './state';
export { turnMachine } from './machine';
export { pendingApprovals } from './tools';
