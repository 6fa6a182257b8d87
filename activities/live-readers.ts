// Which workflows someone reads now, as this worker process sees it. The model activity puts
// a call's text in its heartbeats for readers (client/live-model.ts), and every heartbeat is a
// write on the server: without a reader, a call's text has nobody to reach sooner, so it goes
// by the workflow's stream alone (activities/llm-deltas.ts) and the heartbeats keep their
// clock. A reader asks the workflow's `keel.stream` query at least every 500 ms
// (client/events.ts); the query's handler tells this process through a sink
// (workflows/reader-sink.ts, worker/telemetry.ts). What that does not see: a reader whose
// query a worker in another process answered, while this one runs the call (workers that
// share a task queue); its text then comes by the stream, ~150 ms later, none of it lost.

/** A workflow read within this long counts as read: a few of a quiet reader's 500 ms polls, and the query's way to the worker. */
export const READ_WINDOW_MS = 3_000;
/** Workflows remembered at most; past it the least recently read go first. */
const MAX_REMEMBERED = 10_000;

const lastRead = new Map<string, number>();

/** A reader asked for the workflow's stream just now. */
export function noteReader(workflowId: string, now: number = Date.now()): void {
  // Re-inserted: the map's order is the order of the last reads, oldest first.
  lastRead.delete(workflowId);
  lastRead.set(workflowId, now);
  if (lastRead.size <= MAX_REMEMBERED) return;
  for (const [id, at] of lastRead) {
    if (lastRead.size <= MAX_REMEMBERED && now - at < READ_WINDOW_MS) break;
    lastRead.delete(id);
  }
}

/** Has anyone asked for the workflow's stream within the window? */
export function hasReader(workflowId: string, now: number = Date.now()): boolean {
  const at = lastRead.get(workflowId);
  if (at === undefined) return false;
  if (now - at < READ_WINDOW_MS) return true;
  lastRead.delete(workflowId);
  return false;
}

/** Forget every reader (for tests). */
export function forgetReaders(): void {
  lastRead.clear();
}
