// A run's workflow stream (@temporalio/workflow-streams) with Keel's own record of the items it
// holds, at their offsets: what the stream query (workflows/stream-read.ts), the `events` and
// `transcript` queries and the streamed-text reads page through. The library keeps its log
// private and offers only getState(), which encodes every item on each call (about 30 ms for
// 2,000 items): too slow for a reader asking every 50 ms, and its fields are not ours to read.
//
// The record holds what the library's log holds, in its order, because every item reaches the
// log through here: the workflow's own publishes go through `topic()`, and the publish signal of
// activities and clients is handled here in place of the library's handler (the library says a
// second registration replaces its handlers): the same rule — a publisher's batch whose sequence
// is at or below the last one seen from it is a duplicate, dropped — then each item is appended
// with the library's public topic publish, which takes a prebuilt payload as it is.
//
// No command comes of any of this, so recorded histories replay as before. The publishers' last
// sequences go to the next run with the log (`state()`), pruned after PUBLISHER_TTL_SECONDS as the
// library prunes its own.
import { defaultPayloadConverter, setHandler } from '@temporalio/workflow';
import { decodePayloadWire, type PublishInput, WorkflowStream, workflowStreamPublishSignal, type WorkflowStreamState } from '@temporalio/workflow-streams/workflow';

type StreamPayload = Parameters<typeof defaultPayloadConverter.fromPayload>[0];

export interface StreamItem {
  topic: string;
  payload: StreamPayload;
}

/** The library's default `publisherTtl` (getState): a publisher silent this long is forgotten at continue-as-new. */
const PUBLISHER_TTL_SECONDS = 15 * 60;

export class KeelStream {
  private readonly stream: WorkflowStream;
  private readonly log: StreamItem[];
  /** The offset of `log[0]` (items before it were trimmed at a continue-as-new). */
  readonly base: number;
  private readonly sequences: Record<string, number>;
  private readonly lastSeen: Record<string, number>;

  constructor(prior?: WorkflowStreamState) {
    this.stream = new WorkflowStream(prior);
    this.log = (prior?.log ?? []).map((item) => ({ topic: item.topic, payload: decodePayloadWire(item.data) }));
    this.base = prior?.base_offset ?? 0;
    this.sequences = { ...prior?.publisher_sequences };
    this.lastSeen = { ...prior?.publisher_last_seen };
    setHandler(workflowStreamPublishSignal, (input) => this.published(input));
  }

  /** The stream's end offset. */
  get end(): number {
    return this.base + this.log.length;
  }

  /** The items held, oldest first; `items()[i]` is at offset `base + i`. */
  items(): readonly StreamItem[] {
    return this.log;
  }

  /** Values published on one topic, oldest first (an item that does not decode is skipped). */
  *values<T>(topic: string): Generator<T> {
    for (const item of this.log) {
      if (item.topic !== topic) continue;
      let value: T;
      try {
        value = defaultPayloadConverter.fromPayload<T>(item.payload);
      } catch {
        continue;
      }
      yield value;
    }
  }

  /** A publisher for one topic of the workflow's own items. */
  topic<T>(name: string): { publish(value: T): void } {
    const handle = this.stream.topic<T>(name);
    return {
      publish: (value: T) => {
        const payload = defaultPayloadConverter.toPayload<T>(value);
        handle.publish(payload);
        this.log.push({ topic: name, payload });
      },
    };
  }

  /** Unblocks the library's pollers and refuses new polls (before a continue-as-new or the end). */
  detachPollers(): void {
    this.stream.detachPollers();
  }

  /** What the next run starts from: the library's log and offsets, with the publishers' sequences kept here. */
  state(): WorkflowStreamState {
    const now = Date.now() / 1000;
    const sequences: Record<string, number> = {};
    const lastSeen: Record<string, number> = {};
    for (const [publisher, sequence] of Object.entries(this.sequences)) {
      const seen = this.lastSeen[publisher] ?? 0;
      if (now - seen >= PUBLISHER_TTL_SECONDS) continue;
      sequences[publisher] = sequence;
      lastSeen[publisher] = seen;
    }
    return { ...this.stream.getState(), publisher_sequences: sequences, publisher_last_seen: lastSeen };
  }

  private published(input: PublishInput): void {
    if (input.publisher_id) {
      if (input.sequence <= (this.sequences[input.publisher_id] ?? 0)) return;
      this.sequences[input.publisher_id] = input.sequence;
      this.lastSeen[input.publisher_id] = Date.now() / 1000;
    }
    for (const entry of input.items) {
      const payload = decodePayloadWire(entry.data);
      this.stream.topic(entry.topic).publish(payload);
      this.log.push({ topic: entry.topic, payload });
    }
  }
}
