// Reading a workflow's own event log back from its stream (the `events` topic), for the
// `events` query of sessions, goals and agents and for the transcript's refusals. The
// stream holds the entries of this run (older ones were trimmed at continue-as-new).
import { EVENTS_TOPIC } from './definitions';
import type { KeelStream } from './keel-stream';

/** Every event-log entry this run holds, oldest first. */
export function heldEvents<E extends { seq: number }>(stream: KeelStream): Generator<E> {
  return stream.values<E>(EVENTS_TOPIC);
}

/**
 * A page of the log from seq `from`; `firstAvailable` is the seq of the oldest entry held
 * (`nextSeq` when none is), so a reader knows what it can no longer get.
 */
export function eventsPage<E extends { seq: number }>(stream: KeelStream, input: { from?: number; limit?: number }, nextSeq: number): { firstAvailable: number; entries: E[] } {
  const entries: E[] = [];
  let firstAvailable: number | null = null;
  for (const entry of heldEvents<E>(stream)) {
    firstAvailable ??= entry.seq;
    if (entry.seq >= (input.from ?? 0)) entries.push(entry);
    if (entries.length >= (input.limit ?? 500)) break;
  }
  return { firstAvailable: firstAvailable ?? nextSeq, entries };
}
