// Sink calls by the activation, not by the item. Every sink call costs the worker the same
// whatever it carries: the SDK copies the workflow's info into it, clones it between the
// workflow thread and the main thread, and gives it a random source of its own — a step's
// half-dozen event-log entries and its spans were as many calls (bench profile 2026-11-28,
// one session: the clones alone were ~2% of the workflow thread). Items wait here and go as
// one call per sink at the end of the activation (workflows/sink-interceptors.ts); a sink
// call is not a command, so when it is made changes nothing a replay compares.
//
// Module state is per workflow: the SDK gives each workflow its own module cache.
interface Batch {
  items: unknown[];
  send(items: unknown[]): void;
}
const batches: Batch[] = [];

/** A function that queues an item for `send`, which gets every item of the activation at once. */
export function batched<T>(send: (items: T[]) => void): (item: T) => void {
  const batch: Batch = { items: [], send };
  batches.push(batch);
  return (item) => {
    batch.items.push(item);
  };
}

/** Sends what the activation queued: one call per sink that has items. */
export function flushBatches(): void {
  for (const batch of batches) {
    if (batch.items.length === 0) continue;
    const items = batch.items;
    batch.items = [];
    batch.send(items);
  }
}
