// Following a goal or session: its workflow stream (@temporalio/workflow-streams) as an
// async iterator. `events` carries the event log (SPEC §3 kinds), `model` the streamed
// model text. Every item has the stream's offset: pass `from: offset + 1` to resume (model
// text read live from the server, before it is in the stream, has offset -1: resume after the
// last item with an offset, and the stream brings that text again).
// Read by the `keel.stream` query (workflows/stream-read.ts), with the stream's offsets, so a
// reader resumes exactly before, during and after the close, and a reader that goes away
// leaves nothing waiting in the workflow.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { WorkflowStreamClient } from '@temporalio/workflow-streams/client';
import type { LiveModelText, ModelStreamEvent } from '../shared/model-stream';
import { EVENTS_TOPIC, MODEL_TOPIC, type GoalLogEntry, type LogEntry, type StreamTopic } from '../workflows/definitions';
import { streamReadQuery, type StreamReadPage } from '../workflows/stream-read';
import { LiveOverlay, readLiveModelText } from './live-model';
import { ABORTED, readStreamPage } from './stream-reads';

export type { ModelStreamEvent };

export type StreamItem<E> = { topic: typeof EVENTS_TOPIC; offset: number; data: E } | { topic: typeof MODEL_TOPIC; offset: number; data: ModelStreamEvent };

export interface EventsOptions {
  /** Stream offset to start at (0: the beginning; default). Resume with the last offset + 1. */
  from?: number;
  /** Topics to follow (default both). */
  topics?: StreamTopic[];
  /** Minimum pause between polls in ms (default 50). */
  pollCooldownMs?: number;
  /** Stops following when it aborts. */
  signal?: AbortSignal;
}

export type GoalStreamItem = StreamItem<GoalLogEntry>;
export type SessionStreamItem = StreamItem<LogEntry>;

/** Reads of a model call's live text between two reads of the stream while it streams. */
const LIVE_READS_PER_QUERY = 4;

/** The longest pause between two reads of a quiet stream. */
const IDLE_POLL_MS = 500;

/**
 * Yields the workflow's stream items from `from` on, following continue-as-new, until the
 * workflow closes (then the iterator ends) or `signal` aborts.
 *
 * It reads by the `keel.stream` query, every `pollCooldownMs` while items come, and up to
 * every 500 ms when the stream is quiet. While a model call is in flight (the answer says so)
 * it reads the call's text so far from the server every `pollCooldownMs` instead (the model
 * activity's heartbeats; client/live-model.ts), and the stream every fourth time: model text
 * items from there have offset -1, and each character is yielded once, from whichever copy
 * brings it first. The text of a call that was not in flight at its last read of the stream
 * (the answer names them) comes after what the stream holds before it (the stream is read
 * first): the texts come in order.
 *
 * It does not use the stream's long-poll update: an update waits inside the workflow until
 * the next item, and a reader that goes away (a closed tab, an ended AG-UI run, a proxy's
 * timeout) cannot take it back. Parked there, ten of them filled Temporal's limit of updates
 * in flight per workflow, and every later update (a message, an approval) waited out the
 * API's bound and answered 504. A query parks nothing and adds nothing to the history.
 * Workers from before the query are followed by the long poll as before. All readers of one
 * workflow in this process share its reads, one query at a time (client/stream-reads.ts),
 * and its describes (client/live-model.ts).
 */
export async function* followStream<E>(client: Client, workflowId: string, options: EventsOptions = {}): AsyncGenerator<StreamItem<E>> {
  const topics = options.topics ?? [EVENTS_TOPIC, MODEL_TOPIC];
  const signal = options.signal;
  const busyMs = Math.max(options.pollCooldownMs ?? 50, 10);
  let from = options.from ?? 0;
  let waitMs = busyMs;
  let ended = false;
  // Model text from the server while a call streams, each character shown once (client/live-model.ts).
  const overlay = topics.includes(MODEL_TOPIC) ? new LiveOverlay() : null;
  // Live text of a call that began after the last read of the stream, held until the next.
  let held: LiveModelText[] | null = null;
  // The model calls in flight at the last read of the stream (null: a worker that does not say).
  let inFlight: ReadonlySet<string> | null;
  // Whether the last read of the stream found a model call in flight, and the stream's end then.
  let wasLive = false;
  let lastEnd: number | null = null;
  for (;;) {
    if (signal?.aborted) return;
    let page: StreamReadPage | null = null;
    try {
      const read = await readStreamPage(client, workflowId, { from, topics }, signal);
      if (read === ABORTED) return;
      page = read;
    } catch (error) {
      if (isUnknownQuery(error)) {
        yield* followByPoll<E>(client, workflowId, { ...options, from });
        return;
      }
      if (error instanceof WorkflowNotFoundError) return;
      // A busy or absent worker: the reader waits, as it would on a long poll.
      if (ended) throw error;
    }
    if (page !== null) {
      for (const item of page.items) {
        if (signal?.aborted) return;
        yield (overlay ? overlay.durableItem(item) : item) as StreamItem<E>;
      }
      const more = page.next < page.end;
      from = Math.max(from, page.next);
      inFlight = page.liveCalls ? new Set(page.liveCalls) : null;
      // The stream grew, in topics this reader skips too (a turn started, a tool ran): the
      // workflow is busy and a model call may start any moment, so no backing off. A reader of
      // the model topic alone saw nothing of a turn's start and read it as a quiet stream.
      const moved = lastEnd !== null && page.end > lastEnd;
      lastEnd = page.end;
      const fresh = page.live === true && !wasLive;
      wasLive = page.live === true;
      if (more) {
        waitMs = busyMs;
        continue;
      }
      // Held live text after what the stream had before it; none if the call is over (the
      // stream has all of it then).
      const heldItems = held !== null && page.live === true && overlay ? overlay.liveItems(held) : [];
      held = null;
      for (const item of heldItems) {
        if (signal?.aborted) return;
        yield item;
      }
      if (page.live === true && !ended) {
        // A model call is in flight: the stream is not quiet. Its text comes sooner from the
        // server (client/live-model.ts), read at the busy pace; the stream again every few reads.
        waitMs = busyMs;
        if (!overlay && !(await pause(busyMs, signal))) return;
        for (let read = 0; overlay && read < LIVE_READS_PER_QUERY; read++) {
          // A call this reader just learned of: its text may be on the server already (it read
          // the stream after the call began), so the first describe goes at once, not a pause later.
          if ((read > 0 || !fresh) && !(await pause(busyMs, signal))) return;
          const { calls, waiting } = await readLiveModelText(client, workflowId);
          // A call that was not in flight at the last read of the stream began since: the call
          // then in flight ended, a tool ran, the next began. The stream is read first, at once,
          // so that call's text does not come before what the stream holds ahead of it.
          const flying = inFlight;
          if (flying !== null && calls.some((c) => c.callId !== null && !flying.has(c.callId))) {
            held = calls;
            break;
          }
          for (const item of overlay.liveItems(calls)) {
            if (signal?.aborted) return;
            yield item;
          }
          // The call is over: its end is in the stream. One that has not written yet is asked
          // again at this pace (its text is not in the stream either): reading the stream at once
          // put a query, a worker's task, between a new call and its first text.
          if (calls.length === 0 && waiting === 0) break;
        }
        continue;
      }
      if (page.items.length > 0 || moved) waitMs = busyMs;
      else if (ended) return;
    }
    if (ended) return;
    // Caught up: has the workflow ended? Then one more read takes what came before the close.
    if (waitMs >= IDLE_POLL_MS || page === null) {
      ended = await closed(client, workflowId);
      if (ended) continue;
    }
    if (!(await pause(waitMs, signal))) return;
    waitMs = Math.min(waitMs * 2, IDLE_POLL_MS);
  }
}

/** Waits, or stops at once on abort (false). */
function pause(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The stream's long-poll subscription: for workers from before the `keel.stream` query. */
async function* followByPoll<E>(client: Client, workflowId: string, options: EventsOptions = {}): AsyncGenerator<StreamItem<E>> {
  const stream = WorkflowStreamClient.create(client, workflowId);
  const topics = options.topics ?? [EVENTS_TOPIC, MODEL_TOPIC];
  const items = stream.subscribe<E | ModelStreamEvent>(topics, options.from ?? 0, { resultType: true, pollCooldown: options.pollCooldownMs ?? 50 });
  const aborted = new Promise<'aborted'>((resolve) => {
    if (options.signal?.aborted) resolve('aborted');
    options.signal?.addEventListener('abort', () => resolve('aborted'), { once: true });
  });
  let lastSeq = -1;
  let from = options.from ?? 0;
  try {
    for (;;) {
      let next: IteratorResult<{ topic: string; offset: number; data: E | ModelStreamEvent }> | 'aborted';
      const pending = items.next();
      // On abort this poll is left running; its later failure must not become an
      // unhandled rejection (that ends the caller's process). The race still sees it.
      pending.catch(() => undefined);
      try {
        next = await Promise.race([pending, aborted]);
      } catch (error) {
        if (!(await closed(client, workflowId))) throw error;
        next = { done: true, value: undefined };
      }
      if (next === 'aborted') return;
      if (next.done) break;
      const { topic, offset, data } = next.value;
      if (topic === EVENTS_TOPIC) lastSeq = (data as { seq: number }).seq;
      from = offset + 1;
      yield { topic, offset, data } as StreamItem<E>;
    }
    // The tail the closed workflow no longer serves by poll, read by query with its offsets.
    for (;;) {
      let page: StreamReadPage;
      try {
        page = await client.workflow.getHandle(workflowId).query(streamReadQuery, { from, topics });
      } catch (error) {
        if (!isUnknownQuery(error)) throw error;
        // A worker from before the stream query: the event log's tail without offsets (-1),
        // only when reading from the start or from where an event was seen (no duplicates).
        yield* oldTail<E>(client, workflowId, topics, lastSeq, from);
        return;
      }
      for (const item of page.items) {
        if (options.signal?.aborted) return;
        yield item as StreamItem<E>;
      }
      if (page.next >= page.end || page.next <= from) return;
      from = page.next;
    }
  } finally {
    void items.return(undefined).catch(() => undefined);
  }
}

async function closed(client: Client, workflowId: string): Promise<boolean> {
  try {
    const d = await client.workflow.getHandle(workflowId).describe();
    return d.status.name !== 'RUNNING';
  } catch {
    return false;
  }
}

function isUnknownQuery(error: unknown): boolean {
  const cause = error instanceof Error ? (error as { cause?: unknown }).cause : undefined;
  const text = `${error instanceof Error ? error.message : String(error)} ${cause instanceof Error ? cause.message : ''}`;
  return /keel\.stream/.test(text) && /(unknown|not registered|did not register|no handler)/i.test(text);
}

async function* oldTail<E>(client: Client, workflowId: string, topics: string[], lastSeq: number, from: number): AsyncGenerator<StreamItem<E>> {
  if (!topics.includes(EVENTS_TOPIC) || (lastSeq < 0 && from > 0)) return;
  const page = await client.workflow.getHandle(workflowId).query<{ entries: Array<E & { seq: number }> }, [{ from: number; limit: number }]>('events', { from: lastSeq + 1, limit: 500 });
  for (const data of page.entries) yield { topic: EVENTS_TOPIC, offset: -1, data };
}
