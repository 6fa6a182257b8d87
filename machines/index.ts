// The pure state machines (session, turn, tool-call, autonomy, stream) are exported
// from here; they arrive with their issue. Nothing in machines/ does I/O, reads the
// clock or imports Temporal: the linter enforces it.
export {};
