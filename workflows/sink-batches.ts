// Sink calls by the activation, not by the item. Every sink call costs the worker the same
// whatever it carries: the SDK copies the workflow's info into it, clones it between the
// workflow thread and the main thread, and gives it a random source of its own — a step's
// half-dozen event-log entries and its spans were as many calls (bench profile 2026-11-28,
// one session: the clones alone were ~2% of the workflow thread). Items wait here and go as
// one call per sink at the end of the activation (workflows/sink-interceptors.ts); a sink
// call is not a command, so when it is made changes nothing a replay compares.
import { workflowLocal } from './workflow-local';

type Send = (items: never[]) => void;

/** The activation's items, by the sink call that sends them, in the order each was first queued. */
const queued = workflowLocal('sink-batches', () => new Map<Send, unknown[]>());

/** A function that queues an item for `send`, which gets every item of the activation at once. */
export function batched<T>(send: (items: T[]) => void): (item: T) => void {
  return (item) => {
    const batches = queued();
    const items = batches.get(send);
    if (items) items.push(item);
    else batches.set(send, [item]);
  };
}

/** Sends what the activation queued: one call per sink that has items. */
export function flushBatches(): void {
  const batches = queued();
  if (batches.size === 0) return;
  const ready = [...batches];
  batches.clear();
  for (const [send, items] of ready) send(items as never[]);
}
