// How a turn ends: the one list the turn's result, the session's events, the session's
// record of finished turns and the SDK's TurnOutcome are all derived from (a copy of five
// of the seven once hid `truncated` and `refused` from an SDK user's switch).

/** The outcome of a finished turn (TurnResult.outcome). */
export const TURN_OUTCOMES = ['completed', 'max_steps', 'budget_exhausted', 'interrupted', 'failed', 'truncated', 'refused'] as const;
export type TurnEnd = (typeof TURN_OUTCOMES)[number];

/** Why a turn ended `completed` in its state (turn.completed's reason): `end_turn` is the outcome `completed`. */
export const COMPLETE_REASONS = ['end_turn', 'max_steps', 'budget_exhausted', 'truncated', 'refused'] as const;
export type CompleteReason = (typeof COMPLETE_REASONS)[number];
