// @keel/react/http: Keel's HTTP/SSE API without React (a plain client, the stream reader and
// the reducer of a run's stream), for any front end or a worker script.
export { KeelHttp, KeelHttpError, type KeelHttpOptions } from './client';
export { followRun, type Follow, type FollowOptions } from './stream';
export { applyRunItem, emptyRun, endRun, modelTrouble, type LogEntry, type ModelCall, type ModelTrouble, type RunStream, type StreamItem } from './run-state';
export { conversationOf, type ConversationEntry } from './run-conversation';
export { glanceOf, formatDuration, type RunGlance } from './run-glance';
export type * from './types';
