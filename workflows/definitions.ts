// Every workflow's messages in and out, in one import: the protocol of each kind
// (workflows/protocol/: session.ts, goal.ts, agent.ts, what they share in controls.ts, the
// stream's topics in topics.ts) and the event log's entries (workflows/log-entries.ts).
// Nothing is defined here.
export * from './protocol/controls';
export * from './protocol/session';
export * from './protocol/goal';
export * from './protocol/agent';
export * from './protocol/topics';
export * from './protocol/tool-entry';
export * from './log-entries';
