// One measured phase: what a variant's worker and the dev server spent while a workload
// ran, and what the workflows wrote to history.
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { cpuMs, loadAverage, rssMiB } from './proc';
import type { VariantName } from './variants';

const EventType = proto.temporal.api.enums.v1.EventType;

export interface Phase {
  scenario: string;
  round: number;
  variant: VariantName;
  steps: number;
  modelCalls: number;
  wallMs: number;
  workerCpuMs: number;
  serverCpuMs: number;
  workerRssMiB: number;
  serverRssMiB: number;
  loadAverage1m: number;
  /** History events of the phase's workflows, by type (EVENT_TYPE_ prefix dropped). */
  events: Record<string, number>;
  eventsTotal: number;
  /** Scenario-specific figures (latencies, per-session memory…). */
  extra: Record<string, number>;
  /** Raw samples some scenarios keep, pooled over rounds in the report (first-delta's latencies). */
  samples?: Record<string, number[]>;
}

export interface Pids {
  worker: number;
  server: number;
}

export interface Snapshot {
  at: number;
  workerCpuMs: number;
  serverCpuMs: number;
}

export function snapshot(pids: Pids): Snapshot {
  return { at: performance.now(), workerCpuMs: cpuMs(pids.worker), serverCpuMs: cpuMs(pids.server) };
}

export function since(before: Snapshot, pids: Pids): Pick<Phase, 'wallMs' | 'workerCpuMs' | 'serverCpuMs' | 'workerRssMiB' | 'serverRssMiB' | 'loadAverage1m'> {
  const now = snapshot(pids);
  return {
    wallMs: now.at - before.at,
    workerCpuMs: now.workerCpuMs - before.workerCpuMs,
    serverCpuMs: now.serverCpuMs - before.serverCpuMs,
    workerRssMiB: rssMiB(pids.worker),
    serverRssMiB: rssMiB(pids.server),
    loadAverage1m: loadAverage()[0],
  };
}

/** Events of every run of each workflow (following continue-as-new), counted by type. */
export async function countEvents(client: Client, workflowIds: readonly string[]): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  await mapLimit(workflowIds, 8, async (id) => {
    let runId: string | undefined;
    const seen = new Set<string>();
    // Newest run first; each run's first event names the run it continued.
    for (;;) {
      const history = await client.workflow.getHandle(id, runId).fetchHistory();
      const events = history.events ?? [];
      for (const e of events) {
        const name = (EventType[e.eventType ?? 0] ?? String(e.eventType)).replace(/^EVENT_TYPE_/, '');
        counts[name] = (counts[name] ?? 0) + 1;
      }
      const previous = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
      if (!previous || seen.has(previous)) break;
      seen.add(previous);
      runId = previous;
    }
  });
  return counts;
}

/**
 * Where workflow tasks waited, from the runs' histories (current run only): scheduled → started
 * (on the server's queue until a worker's poll took it) and started → completed (the worker's
 * own time), in ms, one sample per completed task.
 */
export async function workflowTaskTimes(client: Client, workflowIds: readonly string[]): Promise<{ queuedMs: number[]; runMs: number[] }> {
  const queuedMs: number[] = [];
  const runMs: number[] = [];
  // A Long's Number() is its value (as test/e2e/versions-time.test.ts reads event times).
  const ms = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) => (t ? Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6 : Number.NaN);
  await mapLimit(workflowIds, 8, async (id) => {
    const events = (await client.workflow.getHandle(id).fetchHistory()).events ?? [];
    const at = new Map<number, number>();
    for (const e of events) at.set(Number(e.eventId), ms(e.eventTime));
    for (const e of events) {
      const started = e.workflowTaskStartedEventAttributes;
      if (started) queuedMs.push(ms(e.eventTime) - at.get(Number(started.scheduledEventId))!);
      const completed = e.workflowTaskCompletedEventAttributes;
      if (completed) runMs.push(ms(e.eventTime) - at.get(Number(completed.startedEventId))!);
    }
  });
  return { queuedMs: queuedMs.filter(Number.isFinite), runMs: runMs.filter(Number.isFinite) };
}

export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  let failure: { error: unknown } | null = null;
  // After a failure no lane takes new work, and every lane settles before it is thrown:
  // nothing is left running against a connection the caller may close next.
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length && !failure) {
      const i = next++;
      try {
        out[i] = await fn(items[i]!, i);
      } catch (error) {
        failure ??= { error };
      }
    }
  });
  await Promise.all(lanes);
  if (failure) throw (failure as { error: unknown }).error;
  return out;
}
