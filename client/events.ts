// Following a goal or session: its workflow stream (@temporalio/workflow-streams) as an
// async iterator. `events` carries the event log (SPEC §3 kinds), `model` the streamed
// model text. Every item has the stream's offset: pass `from: offset + 1` to resume.
// A workflow that closes stops answering polls, so the last events are read by the
// `events` query then (those items have offset -1: the workflow has ended, nothing follows).
import type { Client } from '@temporalio/client';
import { WorkflowStreamClient } from '@temporalio/workflow-streams/client';
import type { ModelStreamEvent } from '../activities/llm-deltas';
import { EVENTS_TOPIC, MODEL_TOPIC, type GoalLogEntry, type LogEntry } from '../workflows/definitions';

export type { ModelStreamEvent };

export type StreamItem<E> = { topic: 'events'; offset: number; data: E } | { topic: 'model'; offset: number; data: ModelStreamEvent };

export interface EventsOptions {
  /** Stream offset to start at (0: the beginning; default). Resume with the last offset + 1. */
  from?: number;
  /** Topics to follow (default both). */
  topics?: Array<'events' | 'model'>;
  /** Minimum pause between polls in ms (default 50). */
  pollCooldownMs?: number;
  /** Stops following when it aborts. */
  signal?: AbortSignal;
}

export type GoalStreamItem = StreamItem<GoalLogEntry>;
export type SessionStreamItem = StreamItem<LogEntry>;

/**
 * Yields the workflow's stream items from `from` on, following continue-as-new, until the
 * workflow closes (then the iterator ends) or `signal` aborts.
 */
export async function* followStream<E>(client: Client, workflowId: string, options: EventsOptions = {}): AsyncGenerator<StreamItem<E>> {
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
    // The tail the closed workflow no longer serves by poll (only when reading from the start
    // or from where an event was seen, so a resumed reader gets no duplicates).
    if (!topics.includes(EVENTS_TOPIC) || (lastSeq < 0 && from > 0)) return;
    const page = await client.workflow.getHandle(workflowId).query<{ entries: Array<E & { seq: number }> }, [{ from: number; limit: number }]>('events', { from: lastSeq + 1, limit: 500 });
    for (const data of page.entries) yield { topic: 'events', offset: -1, data };
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
