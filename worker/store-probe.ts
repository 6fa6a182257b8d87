// Misconfiguration caught at start. A worker opens the conversation store it is configured
// with (KEEL_STORE_URL or KEEL_STORE_DIR) and reads its identity marker — the first worker
// writes it — then asks Temporal who else polls its task queue: every Keel worker names
// its store's identity in its worker identity (`keel-store=<id> <pid>@<host>`). A worker whose store
// is not the one the fleet shares (another directory on another host, another database)
// refuses to start, with one line saying why; sessions record the identity of the store
// they started on, and a worker that sees another store refuses their activities
// (activities/conversation-store.ts checkStoreIdentity). Before, such a fleet passed every
// smoke test — workflows stick to the worker that ran them — and broke at its first failover.
import os from 'node:os';
import type { NativeConnection } from '@temporalio/worker';
import { storeIdentity } from '../activities/conversation-store';
import { workerStore } from '../activities/store/open';

export class StoreProbeError extends Error {
  override readonly name = 'StoreProbeError';
}

export interface StoreProbe {
  /** The worker identity to poll with: it names the store's identity for the rest of the fleet. */
  identity: string;
  /** One line for the worker's log. */
  line: string;
  storeId: string | null;
}

const TAG = /\bkeel-store=(\S+)/;

/** The store id a poller's identity names, or undefined for a poller that is not a Keel worker of this kind. */
export function storeIdOfPoller(identity: string): string | undefined {
  return TAG.exec(identity)?.[1];
}

export async function probeStore(options: { connection: NativeConnection; namespace: string; taskQueue: string; env?: NodeJS.ProcessEnv }): Promise<StoreProbe> {
  const env = options.env ?? process.env;
  let store;
  try {
    store = workerStore(env);
  } catch (error) {
    throw new StoreProbeError(`keel worker: ${(error as Error).message}`);
  }
  let storeId: string | null = null;
  let line: string;
  if (store === null) {
    line = 'keel worker: conversation store: the directory each session names (<workspace>/.keel/store); workers on several hosts need KEEL_STORE_URL=postgres://… or one shared KEEL_STORE_DIR';
  } else {
    try {
      const found = await storeIdentity(store);
      storeId = found.id;
      line = `keel worker: conversation store: ${store.kind} ${store.where} (id ${found.id}${found.created ? ', marked by this worker: the first of its fleet' : ''})`;
    } catch (error) {
      throw new StoreProbeError(`keel worker: cannot use the conversation store ${store.kind} ${store.where}: ${(error as Error).message}`);
    }
  }
  const mine = storeId ?? 'none';
  let others: Map<string, number>;
  try {
    others = await fleetStoreIds(options);
  } catch (error) {
    // Temporal cannot answer now (a server restarting): the worker starts, and each
    // session's calls are still checked against the store it recorded.
    return { identity: `keel-store=${mine} ${process.pid}@${os.hostname()}`, line: `${line}; the fleet's stores not checked (${(error as Error).message.split('\n')[0]})`, storeId };
  }
  // Pollers are listed for a few minutes after they stop: a worker that was fixed and
  // restarted must not be refused for its own stale entry, so the test is whether any
  // other worker shares this store, not whether all do.
  const differing = [...others].filter(([id]) => id !== mine);
  if (differing.length > 0 && !others.has(mine)) {
    const [theirs, count] = differing.sort((a, b) => b[1] - a[1])[0]!;
    const where = store === null ? 'the directory each session names (no KEEL_STORE_URL or KEEL_STORE_DIR)' : `${store.kind} ${store.where} (id ${mine})`;
    throw new StoreProbeError(
      `keel worker: refusing to start: ${count} worker${count === 1 ? '' : 's'} polling task queue "${options.taskQueue}" use conversation store ${theirs === 'none' ? 'of each session' : theirs}, but this one's is ${where}; give it the fleet's KEEL_STORE_URL / KEEL_STORE_DIR`,
    );
  }
  // `<pid>@<hostname>` stays last: the container health check matches pollers by it.
  return { identity: `keel-store=${mine} ${process.pid}@${os.hostname()}`, line, storeId };
}

/** The store ids the task queue's current pollers name, with how many name each. */
async function fleetStoreIds(options: { connection: NativeConnection; namespace: string; taskQueue: string }): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  const seen = new Set<string>();
  // TASK_QUEUE_TYPE_WORKFLOW = 1, TASK_QUEUE_TYPE_ACTIVITY = 2 (temporal.api.enums.v1.TaskQueueType).
  for (const taskQueueType of [2, 1]) {
    const answer = await options.connection.workflowService.describeTaskQueue({ namespace: options.namespace, taskQueue: { name: options.taskQueue }, taskQueueType });
    for (const poller of answer.pollers ?? []) {
      const identity = poller.identity ?? '';
      const id = storeIdOfPoller(identity);
      if (id === undefined || seen.has(identity)) continue;
      seen.add(identity);
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
  }
  return counts;
}
