// Live model output for people watching: text and thinking deltas go to the calling
// workflow's stream (@temporalio/workflow-streams) on their own topic. Every signal is
// a workflow task and four history events, so they are spent where a watcher sees them:
// the first deltas of a call go out ~25 ms after they arrive (a watcher sees text start at
// once), later ones merged per block every ~150 ms (a long answer costs a few signals a
// second, not one per token). The start and retry markers wait for the next send instead of
// forcing their own: a short reply is one signal (start, text, stop) instead of two. An
// interrupt still sees the start marker: the activity drains its buffer before it
// acknowledges the cancel, and the turn waits for that (WAIT_CANCELLATION_COMPLETED).

/** The workflow-stream topic model output travels on. */
export const MODEL_STREAM_TOPIC = 'model';

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

/** The slice of a workflow-stream topic handle this needs (a fake in unit tests). */
export interface TopicPublisher {
  publish(value: ModelStreamEvent, options?: { forceFlush?: boolean }): void;
}

export class DeltaPublisher {
  private pending: Array<{ index: number; block: 'text' | 'thinking'; text: string }> = [];
  private timer: NodeJS.Timeout | undefined;
  private sentDeltas = false;

  constructor(
    private readonly topic: TopicPublisher,
    private readonly call: { callId: string | null; attempt: number },
    private readonly intervalMs = 150,
    private readonly firstDeltaMs = Math.min(25, intervalMs),
  ) {}

  retry(): void {
    this.send({ kind: 'retry', ...this.call }, false);
  }

  start(requestId: string | null, model: string, billed: { inputTokens: number; inputCostUsd: number | null; outputUsdPerToken: number | null }): void {
    this.send({ kind: 'start', ...this.call, requestId, model, ...billed }, false);
  }

  delta(index: number, block: 'text' | 'thinking', text: string): void {
    if (text.length === 0) return;
    const last = this.pending.at(-1);
    if (last && last.index === index && last.block === block) last.text += text;
    else this.pending.push({ index, block, text });
    this.timer ??= setTimeout(() => this.flushDeltas(), this.sentDeltas ? this.intervalMs : this.firstDeltaMs);
  }

  stop(stopReason: string | null): void {
    this.send({ kind: 'stop', ...this.call, stopReason }, true);
  }

  /** Sends what is merged so far. */
  flushDeltas(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending;
    this.pending = [];
    if (batch.length > 0) this.sentDeltas = true;
    batch.forEach((delta, position) =>
      this.topic.publish({ kind: 'delta', ...this.call, ...delta }, { forceFlush: position === batch.length - 1 }),
    );
  }

  /** Drops what was not sent yet: after a cancel nobody should see more of this attempt. */
  discard(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.pending = [];
  }

  private send(event: ModelStreamEvent, forceFlush: boolean): void {
    this.flushDeltas();
    this.topic.publish(event, { forceFlush });
  }
}
