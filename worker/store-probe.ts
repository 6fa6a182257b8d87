// Misconfiguration caught at start. A worker opens the conversation store it is configured
// with (KEEL_STORE_URL or KEEL_STORE_DIR) and reads its identity marker — the first worker
// writes it — then asks Temporal who else polls its task queue: every Keel worker names
// its store's identity in its worker identity (`keel-store=<id> <pid>@<host>`). A worker whose store
// is not the one the fleet shares (another directory on another host, another database)
// refuses to start, with one line saying why; sessions record the identity of the store
// they started on, and a worker that sees another store refuses their activities
// (activities/conversation-store.ts checkStoreIdentity). Before, such a fleet passed every
// smoke test — workflows stick to the worker that ran them — and broke at its first failover.
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { msToTs } from '@temporalio/common/lib/time';
import type { NativeConnection } from '@temporalio/worker';
import { storeIdentity } from '../activities/conversation-store';
import { ConversationStoreError } from '../activities/store/errors';
import { workerStore } from '../activities/store/open';
import { infraWaitDecision } from '../machines/infra-retry';
import { temporalWaitMs } from './temporal-wait';

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

export async function probeStore(options: {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  env?: NodeJS.ProcessEnv;
  /** How long to wait for listed workers of another store to show they run (default 10 s). */
  watchMs?: number;
  /** Where a wait for an unreachable store is told, one line a try (default console.log). */
  log?: (line: string) => void;
  /** How long an unreachable store is waited for (default KEEL_TEMPORAL_WAIT_MS, else the infrastructure table's horizon). */
  horizonMs?: number;
  sleep?: (ms: number) => Promise<void>;
}): Promise<StoreProbe> {
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
      const found = await waitForStore(() => storeIdentity(store), `${store.kind} ${store.where}`, { ...options, horizonMs: options.horizonMs ?? temporalWaitMs(env) });
      storeId = found.id;
      line = `keel worker: conversation store: ${store.kind} ${store.where} (id ${found.id}${found.created ? ', marked by this worker: the first of its fleet' : ''})`;
    } catch (error) {
      throw new StoreProbeError(`keel worker: cannot use the conversation store ${store.kind} ${store.where}: ${(error as Error).message}`);
    }
  }
  const mine = storeId ?? 'none';
  const identity = `keel-store=${mine} ${process.pid}@${os.hostname()}`;
  let others: Map<string, Poller>;
  try {
    others = await fleetPollers(options);
  } catch (error) {
    // Temporal cannot answer now (a server restarting): the worker starts, and each
    // session's calls are still checked against the store it recorded.
    return { identity, line: `${line}; the fleet's stores not checked (${(error as Error).message.split('\n')[0]})`, storeId };
  }
  // A worker that shares this store is polling: this one is of the fleet (another worker on
  // another store is the one to fix, and it would be refused when it starts again).
  if ([...others.values()].some((p) => p.storeId === mine)) return { identity, line, storeId };
  const differing = [...others.values()].filter((p) => p.storeId !== mine);
  if (differing.length === 0) return { identity, line, storeId };
  // Temporal lists a poller for minutes after it stopped: a wrong worker that ran first and
  // was stopped would make every right one refuse until its entry expired. Whether those
  // workers still run is asked of them: a task only live workers can take is put on the
  // queue, and a live poller then polls again (its last access moves).
  const live = await livePollers(options, differing, options.watchMs ?? LIVENESS_WATCH_MS);
  if (live.length === 0) {
    const ids = [...new Set(differing.map((p) => p.storeId))].join(', ');
    return { identity, line: `${line}; ignored ${differing.length} stopped worker${differing.length === 1 ? '' : 's'} Temporal still lists on task queue "${options.taskQueue}" (store ${ids}; none polled again)`, storeId };
  }
  const counts = new Map<string, number>();
  for (const p of live) counts.set(p.storeId, (counts.get(p.storeId) ?? 0) + 1);
  const [theirs, count] = [...counts].sort((a, b) => b[1] - a[1])[0]!;
  const where = store === null ? 'the directory each session names (no KEEL_STORE_URL or KEEL_STORE_DIR)' : `${store.kind} ${store.where} (id ${mine})`;
  throw new StoreProbeError(
    `keel worker: refusing to start: ${count} worker${count === 1 ? '' : 's'} polling task queue "${options.taskQueue}" use conversation store ${theirs === 'none' ? 'of each session' : theirs}, but this one's is ${where}; give it the fleet's KEEL_STORE_URL / KEEL_STORE_DIR`,
  );
}

/**
 * The store's answer, once it answers: a store that cannot be reached now (a database
 * restarting, a network blip: transient in machines/infra-retry.ts) is tried again on the
 * table's backoff, one line a try, like Temporal at start (worker/temporal-wait.ts). A worker
 * restarted while PostgreSQL was down used to exit 1 at once ("cannot use the conversation
 * store … ECONNREFUSED"), and its host's runs waited for a worker nobody started again
 * (npm run fleet, seed 4501). A permanent error (a wrong password, a foreign store) still
 * ends the start at once.
 */
async function waitForStore<T>(read: () => Promise<T>, where: string, options: { log?: (line: string) => void; horizonMs: number; sleep?: (ms: number) => Promise<void> }): Promise<T> {
  const log = options.log ?? ((line: string) => console.log(line));
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const since = Date.now();
  for (let tries = 1; ; tries++) {
    try {
      const value = await read();
      if (tries > 1) log(`keel worker: the conversation store ${where} answered after ${tries} tries (${Math.round((Date.now() - since) / 1000)} s)`);
      return value;
    } catch (error) {
      const message = (error instanceof Error ? error.message : String(error)).split('\n')[0]!;
      if (!(error instanceof ConversationStoreError && error.transient)) throw error;
      const decision = infraWaitDecision({ tries, since, now: Date.now(), horizonMs: options.horizonMs });
      if (!decision.wait) throw new Error(`${decision.reason}: ${message}`, { cause: error });
      log(`keel worker: waiting for the conversation store ${where}, try ${tries}: ${message}; next try in ${Math.round(decision.delayMs / 1000)} s`);
      await sleep(decision.delayMs);
    }
  }
}

/** How long the probe waits for a listed worker of another store to show that it runs. */
const LIVENESS_WATCH_MS = 10_000;

interface Poller {
  identity: string;
  storeId: string;
  /** When it last polled, by the server's clock (ms), per task queue type. */
  lastAccess: string;
}

/** The Keel workers Temporal lists on the task queue (workflow and activity pollers), by identity. */
async function fleetPollers(options: { connection: NativeConnection; namespace: string; taskQueue: string }): Promise<Map<string, Poller>> {
  const found = new Map<string, Poller>();
  // TASK_QUEUE_TYPE_WORKFLOW = 1, TASK_QUEUE_TYPE_ACTIVITY = 2 (temporal.api.enums.v1.TaskQueueType).
  for (const taskQueueType of [2, 1]) {
    const answer = await options.connection.workflowService.describeTaskQueue({ namespace: options.namespace, taskQueue: { name: options.taskQueue }, taskQueueType });
    for (const poller of answer.pollers ?? []) {
      const identity = poller.identity ?? '';
      const storeId = storeIdOfPoller(identity);
      if (storeId === undefined) continue;
      const at = `${taskQueueType}:${String(poller.lastAccessTime?.seconds ?? 0)}.${poller.lastAccessTime?.nanos ?? 0}`;
      const seen = found.get(identity);
      found.set(identity, { identity, storeId, lastAccess: seen ? `${seen.lastAccess} ${at}` : at });
    }
  }
  return found;
}

/**
 * The listed workers that still run. An idle live worker polls again only when its long
 * poll ends (a minute), so waiting alone is slow: a workflow task (`keelStoreProbe`, which
 * does nothing; workers that predate it fail its task, which serves as well) is put on the
 * queue; a live worker takes it, polls again, and Temporal's entry for it moves. A stopped
 * worker's entry does not. The probe workflow is terminated afterwards if still open.
 */
async function livePollers(options: { connection: NativeConnection; namespace: string; taskQueue: string }, listed: Poller[], watchMs: number): Promise<Poller[]> {
  const service = options.connection.workflowService;
  const workflowId = `keel-store-probe-${randomUUID()}`;
  await service
    .startWorkflowExecution({
      namespace: options.namespace,
      workflowId,
      workflowType: { name: 'keelStoreProbe' },
      taskQueue: { name: options.taskQueue },
      requestId: randomUUID(),
      workflowRunTimeout: msToTs(watchMs + 30_000),
      identity: `keel-store-probe ${process.pid}@${os.hostname()}`,
    })
    .catch(() => null);
  try {
    const deadline = Date.now() + watchMs;
    for (;;) {
      const now = await fleetPollers(options).catch(() => new Map<string, Poller>());
      const moved = listed.filter((p) => {
        const again = now.get(p.identity);
        return again !== undefined && again.lastAccess !== p.lastAccess;
      });
      if (moved.length > 0) return moved;
      if (Date.now() >= deadline) return [];
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  } finally {
    await service.terminateWorkflowExecution({ namespace: options.namespace, workflowExecution: { workflowId }, reason: 'store probe done' }).catch(() => null);
  }
}
