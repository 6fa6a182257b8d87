// What the model activity streams to people watching a call (on the stream's MODEL_TOPIC,
// workflows/protocol/topics.ts), and what every reader of that
// stream or of the activity's heartbeats decodes: the activity writes it (activities/llm-deltas.ts,
// activities/llm.ts), workflows pass it on (workflows/model-stream.ts), the SDK and the console
// read it (client/events.ts, client/live-model.ts). Types and pure helpers only, so each side
// imports them from this low layer rather than from the activity that writes them.

export type ModelStreamEvent =
  /** A new attempt begins: everything shown from earlier attempts of this call is void. */
  | { kind: 'retry'; callId: string | null; attempt: number }
  | {
      kind: 'start';
      callId: string | null;
      attempt: number;
      requestId: string | null;
      model: string;
      /** Billed from message_start on (an interrupt counts these plus the streamed output). */
      inputTokens?: number;
      inputCostUsd?: number | null;
      outputUsdPerToken?: number | null;
    }
  | { kind: 'delta'; callId: string | null; attempt: number; index: number; block: 'text' | 'thinking'; text: string }
  | { kind: 'stop'; callId: string | null; attempt: number; stopReason: string | null };

/**
 * The call's text so far, in every heartbeat of the model activity: a client reads it with
 * DescribeWorkflowExecution (client/live-model.ts), from the server alone, no workflow task,
 * while the same text reaches the workflow's stream later (signals, the result's tail).
 * Each block's `tail` is its last LIVE_TAIL_CHARS characters; `length` says where it ends.
 */
export interface LiveModelText {
  callId: string | null;
  attempt: number;
  blocks: Array<{ index: number; block: 'text' | 'thinking'; length: number; tail: string }>;
}

/** A reader that polls every 50 ms is never this far behind: a block's text in a heartbeat is bounded. */
export const LIVE_TAIL_CHARS = 4_096;

/** A heartbeat's live view of the blocks streamed so far (MessageAccumulator.streamedBlocks). */
export function liveText(call: { callId: string | null; attempt: number }, blocks: ReadonlyArray<{ index: number; block: 'text' | 'thinking'; text: string }>): LiveModelText {
  return { ...call, blocks: blocks.map(({ index, block, text }) => ({ index, block, length: text.length, tail: text.slice(-LIVE_TAIL_CHARS) })) };
}
