// The topics of a workflow's stream (@temporalio/workflow-streams): the event log (SPEC §3
// events) and the model's streamed text, which the model activity publishes
// (activities/llm-deltas.ts). Readers and writers name them through these constants.
export const EVENTS_TOPIC = 'events';
export const MODEL_TOPIC = 'model';
export type StreamTopic = typeof EVENTS_TOPIC | typeof MODEL_TOPIC;
