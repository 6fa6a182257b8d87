// Reading a workflow's stream by query, with the stream's own offsets. A closed workflow
// no longer answers the stream's poll update, but it still answers queries: a reader that
// reconnects after the end (Last-Event-ID: 10 on a goal that has finished) reads what it
// missed here, every item with its offset, so resuming is exact before, during and after
// the close. Queries add no commands: old histories replay unchanged.
import { defaultPayloadConverter, defineQuery, setHandler } from '@temporalio/workflow';
import type { KeelStream } from './keel-stream';
import { noteStreamRead } from './reader-sink';

export interface StreamReadInput {
  /** The first offset wanted. */
  from: number;
  /** At most this many items (default and maximum 1,000). */
  limit?: number;
  /** Only these topics (default all). */
  topics?: string[];
}

export interface StreamReadPage {
  items: Array<{ topic: string; offset: number; data: unknown }>;
  /** Where the next page starts (the stream's end when the page reached it). */
  next: number;
  /** The stream's end offset. */
  end: number;
  /** The oldest offset still kept (older ones were trimmed at a continue-as-new). */
  first: number;
  /**
   * A model call is in flight: its text may come any moment, so a reader asks again at its busy
   * pace instead of backing off as from a quiet stream. Absent from workers before it.
   */
  live?: boolean;
  /**
   * The call ids of the model calls in flight (what their live text is keyed by): a reader
   * shows at once the live text of these, and reads the stream first for any other (a call
   * that began after this answer). Absent from workers before it.
   */
  liveCalls?: string[];
}

export const streamReadQuery = defineQuery<StreamReadPage, [StreamReadInput]>('keel.stream');

const MAX_ITEMS = 1_000;
/** Bounds a page well under the 4 MB a query answer may carry. */
const MAX_BYTES = 1_000_000;

/** The model calls in flight, by call id (an empty list: none). */
export type LiveCalls = () => readonly string[];

export function registerStreamRead(stream: KeelStream, live: LiveCalls = () => []): void {
  setHandler(streamReadQuery, (input) => {
    // The worker learns that someone reads: its model calls heartbeat their text for them.
    noteStreamRead();
    const from = Number.isSafeInteger(input?.from) && input.from >= 0 ? input.from : 0;
    const limit = Number.isSafeInteger(input?.limit) && input.limit! > 0 ? Math.min(input.limit!, MAX_ITEMS) : MAX_ITEMS;
    const topics = Array.isArray(input?.topics) ? new Set(input.topics.map(String)) : null;
    // Keel's own record of the stream (workflows/keel-stream.ts): a page costs the page.
    const base = stream.base;
    const log = stream.items();
    const end = stream.end;
    const items: StreamReadPage['items'] = [];
    let bytes = 0;
    let i = Math.max(from - base, 0);
    for (; i < log.length && items.length < limit; i++) {
      const entry = log[i]!;
      if (topics && !topics.has(entry.topic)) continue;
      const size = entry.payload.data?.length ?? 0;
      if (bytes + size > MAX_BYTES && items.length > 0) break;
      bytes += size;
      items.push({ topic: entry.topic, offset: base + i, data: defaultPayloadConverter.fromPayload(entry.payload) });
    }
    const calls = live();
    return { items, next: base + i, end, first: base, ...(calls.length > 0 ? { live: true, liveCalls: [...calls] } : {}) };
  });
}
