// Live model output for people watching: text and thinking deltas go to the calling
// workflow's stream (@temporalio/workflow-streams) on their own topic. Every signal is
// a workflow task and four history events, so they are spent only where a watcher sees text
// sooner than the call's result would bring it: the first deltas of a call go out ~25 ms
// after they arrive (a watcher sees text start at once), later ones merged per block every
// ~150 ms (a long answer costs a few signals a second, not one per token; longer when many calls
// stream on the worker: activities/stream-pace.ts). What is still held
// when the message ends is not signalled at all: it is the call's `streamTail`, returned with
// the result, and the workflow appends it to the same topic in the task that takes the result.
// A reply that streams in under ~25 ms (most tool-call steps) costs no signal; its watcher
// sees it when the workflow does. The start and retry markers wait for the next send, or go
// alone after the interval (an interrupt before any text still sees what input was billed).
// A cancel drops the held deltas: nobody should see more of an attempt after its interrupt.
import type { ModelStreamEvent } from '../shared/model-stream';

/** The slice of a workflow-stream topic handle this needs (a fake in unit tests). */
export interface TopicPublisher {
  publish(value: ModelStreamEvent, options?: { forceFlush?: boolean }): void;
}

/** How soon a call's first deltas go out to a workflow someone reads. */
export const FIRST_DELTA_MS = 25;

export class DeltaPublisher {
  /** Markers (retry, start) and merged deltas not sent yet, in order. */
  private held: ModelStreamEvent[] = [];
  private timer: NodeJS.Timeout | undefined;
  private dueAt = Infinity;
  private sentDeltas = false;

  /**
   * `interval`: the wait between sends, asked at each (a worker's `StreamPace` lengthens it
   * while many calls stream); `firstDelta`: the wait for the first deltas, never longer.
   */
  constructor(
    private readonly topic: TopicPublisher,
    private readonly call: { callId: string | null; attempt: number },
    private readonly interval: () => number = () => 150,
    private readonly firstDelta: () => number = () => FIRST_DELTA_MS,
  ) {}

  retry(): void {
    this.hold({ kind: 'retry', ...this.call }, this.interval());
  }

  start(requestId: string | null, model: string, billed: { inputTokens: number; inputCostUsd: number | null; outputUsdPerToken: number | null }): void {
    this.hold({ kind: 'start', ...this.call, requestId, model, ...billed }, this.interval());
  }

  delta(index: number, block: 'text' | 'thinking', text: string): void {
    if (text.length === 0) return;
    const last = this.held.at(-1);
    if (last?.kind === 'delta' && last.index === index && last.block === block) last.text += text;
    else this.held.push({ kind: 'delta', ...this.call, index, block, text });
    const interval = this.interval();
    this.arm(this.sentDeltas ? interval : Math.min(this.firstDelta(), interval));
  }

  /**
   * The message is whole: what is still held, and the stop marker, for the result to carry
   * (nothing is sent). Deltas sent before travel ahead of it: the activity delivers them before
   * it completes.
   */
  stop(stopReason: string | null): ModelStreamEvent[] {
    this.disarm();
    const tail = [...this.held, { kind: 'stop' as const, ...this.call, stopReason }];
    this.held = [];
    return tail;
  }

  /** Sends what is held (the call failed, or its interval is up). */
  flush(): void {
    this.disarm();
    const batch = this.held;
    this.held = [];
    if (batch.some((event) => event.kind === 'delta')) this.sentDeltas = true;
    batch.forEach((event, position) => this.topic.publish(event, { forceFlush: position === batch.length - 1 }));
  }

  /** After a cancel: the held deltas are dropped, the markers still go (they say what was billed). */
  discard(): void {
    this.held = this.held.filter((event) => event.kind !== 'delta');
    this.flush();
  }

  private hold(event: ModelStreamEvent, withinMs: number): void {
    this.held.push(event);
    this.arm(withinMs);
  }

  /** Sends within `ms` at the latest (an earlier send stays). */
  private arm(ms: number): void {
    const due = Date.now() + ms;
    if (this.timer !== undefined && this.dueAt <= due) return;
    clearTimeout(this.timer);
    this.dueAt = due;
    this.timer = setTimeout(() => this.flush(), ms);
  }

  private disarm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.dueAt = Infinity;
  }
}
