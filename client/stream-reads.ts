// Reads of a workflow's stream (the `keel.stream` query), one at a time per workflow from one
// client, shared by the readers that ask for the same page.
//
// Why: every reader of a workflow (each SSE tab, each AG-UI run, each `keel watch`) polled it
// with its own query, so ten readers put ten queries on the workflow at once. The worker's SDK
// core takes one task per workflow at a time and buffers the others; when the workflow is
// evicted from its cache (it finished, the cache is full) it keeps one buffered task and drops
// the rest unanswered ("There were leftover buffered tasks when evicting run"). A dropped query
// is answered by nobody: its caller waits out its deadline, and the API's 15 s bound on a later
// request to that workflow (an AG-UI run, an approval) ran out behind them and answered 504.
// Through this gate a client has at most one stream query in flight per workflow, whatever
// the number of readers; a reader that goes away while its read waits its turn sends nothing.
import type { Client } from '@temporalio/client';
import { streamReadQuery, type StreamReadInput, type StreamReadPage } from '../workflows/stream-read';

/** A stream query nobody answered (dropped by the worker) frees the gate after this long: the API's own bound on a request, as a replay of a long finished workflow on a busy worker may take most of it. */
export const STREAM_QUERY_DEADLINE_MS = 15_000;

export const ABORTED: unique symbol = Symbol('aborted');

interface PendingRead {
  promise: Promise<StreamReadPage>;
  /** Readers still waiting for it: when none is left before it starts, it is not sent; after, it is cancelled. */
  waiters: number;
  /** Set when the query is sent: cancels its gRPC call once nobody waits for the answer. */
  cancel: AbortController | null;
}

class WorkflowGate {
  /** The end of the queue: the next read starts after this settles. */
  tail: Promise<unknown> = Promise.resolve();
  readonly pending = new Map<string, PendingRead>();
  queued = 0;
}

class NobodyWaits extends Error {}

const gates = new WeakMap<Client, Map<string, WorkflowGate>>();

/** How many stream queries this client has queued or in flight for the workflow (for tests). */
export function streamReadsQueued(client: Client, workflowId: string): number {
  return gates.get(client)?.get(workflowId)?.queued ?? 0;
}

/**
 * One page of the workflow's stream, read after the reads of that workflow already queued by
 * this client; a read of the same page already queued is shared. ABORTED as soon as `signal`
 * aborts (the read is not sent if no other reader waits for it).
 */
export function readStreamPage(client: Client, workflowId: string, input: StreamReadInput, signal?: AbortSignal): Promise<StreamReadPage | typeof ABORTED> {
  if (signal?.aborted) return Promise.resolve(ABORTED);
  let byWorkflow = gates.get(client);
  if (!byWorkflow) gates.set(client, (byWorkflow = new Map<string, WorkflowGate>()));
  let gate = byWorkflow.get(workflowId);
  if (!gate) byWorkflow.set(workflowId, (gate = new WorkflowGate()));
  const g = gate;
  const key = JSON.stringify([input.from, input.limit ?? null, input.topics ?? null]);
  let read = g.pending.get(key);
  if (!read) {
    const entry: PendingRead = { promise: Promise.resolve() as unknown as Promise<StreamReadPage>, waiters: 0, cancel: null };
    g.queued++;
    entry.promise = g.tail.then(() => {
      // Everyone who wanted this page went away while it waited: nothing is sent.
      if (entry.waiters === 0) throw new NobodyWaits();
      const handle = client.workflow.getHandle(workflowId);
      const deadline = Date.now() + STREAM_QUERY_DEADLINE_MS;
      entry.cancel = new AbortController();
      return client.connection.withAbortSignal(entry.cancel.signal, () => client.connection.withDeadline(deadline, () => handle.query(streamReadQuery, input)));
    });
    g.pending.set(key, entry);
    const done = () => {
      g.queued--;
      if (g.pending.get(key) === entry) g.pending.delete(key);
      if (g.queued === 0 && byWorkflow.get(workflowId) === g) byWorkflow.delete(workflowId);
    };
    g.tail = entry.promise.then(done, done);
    // A failure nobody waits for any more must not be an unhandled rejection.
    entry.promise.catch(() => undefined);
    read = entry;
  }
  // Joined a read that was just given up (nobody waited when its turn came): queue anew.
  return waitFor(read, signal, () => readStreamPage(client, workflowId, input, signal));
}

function waitFor(read: PendingRead, signal: AbortSignal | undefined, again: () => Promise<StreamReadPage | typeof ABORTED>): Promise<StreamReadPage | typeof ABORTED> {
  read.waiters++;
  return new Promise((resolve, reject) => {
    let settled = false;
    const leave = () => {
      if (settled) return false;
      settled = true;
      // The last reader gone: its query, if already sent, is cancelled (nothing left on the server for it).
      if (--read.waiters === 0) read.cancel?.abort();
      signal?.removeEventListener('abort', onAbort);
      return true;
    };
    const onAbort = () => {
      if (leave()) resolve(ABORTED);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    read.promise.then(
      (page) => {
        if (leave()) resolve(page);
      },
      (error: unknown) => {
        if (!leave()) return;
        if (error instanceof NobodyWaits) resolve(again());
        else reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
