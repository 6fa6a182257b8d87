// One conversation (seed 000 Session, 002 Session, 003 tmux session, 001's outer loop).
// The session decides when a turn may run — one at a time, messages that arrive
// meanwhile wait in a queue and are never lost — and owns the budgets that outlive a
// turn. It drives the turn machine only through directives (`start_turn`,
// `forward_to_turn`), so the runner holds both states and applies events mechanically.
// One concept a file: state.ts (what a session holds, its first state), protocol.ts (events,
// directives, turn directives as session events), machine.ts (the transition table),
// reduce.ts (one case per event), work.ts (what comes next: work, suspend, close, the idle
// timer), raise-budget.ts (changing a limit).
export { createSession, DEFAULT_MAX_CONSECUTIVE_ERRORS, sessionStateSchema, STOPPED_INITIALIZING, type NewSession, type SessionState, type SessionStatus } from './state';
export { sessionEventFromTurn, sessionEventSchema, type SessionDirective, type SessionEvent, type SessionStats } from './protocol';
export { sessionMachine } from './machine';
export { exhaustionOf, statsOf } from './work';
