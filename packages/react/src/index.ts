// @keel/react: hooks over Keel's HTTP/SSE API (docs/react.md), and everything of
// @keel/react/http (the client without React) again, so one import is enough.
export { KeelProvider, useKeel, useRun, useSession, useGoal, useInbox, type SessionHook, type GoalHook, type InboxHook } from './hooks';
export * from './http/index';
