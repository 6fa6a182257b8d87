// Every worker looks, now and then, for runs of its task queue whose workflow tasks keep
// failing or timing out, and repairs those the SDK cannot replay for its known reason
// (worker/replay-repair.ts). The server marks such runs itself: `TemporalReportedProblems`
// is set after a number of consecutive workflow task problems (dynamic config
// `system.numConsecutiveWorkflowTaskProblemsToTriggerSearchAttribute`; Keel's dev server sets
// it, docs/deployment.md says how for other servers). Without it the sweep says so once and
// stops; `keel repair <id>` still works.
import type { Client } from '@temporalio/client';
import type { ReplayWorkerOptions } from '@temporalio/worker';
import { keelEnv } from '../shared/env';
import { type RepairOutcome, repairRun } from './replay-repair';

/** The server's marks of a run whose tasks keep failing or timing out (as the Web UI's "Task Failures" view reads them). */
export const REPORTED_PROBLEMS = ['category=WorkflowTaskFailed', 'category=WorkflowTaskTimedOut'] as const;

/**
 * `version` (`<deployment>:<build id>`): a versioned worker repairs only the runs pinned to its
 * own build (worker/deployment.ts): another build's runs replay with another build's code.
 */
export function stuckRunsQuery(taskQueue: string, version?: string): string {
  const own = version === undefined ? '' : ` AND TemporalWorkerDeploymentVersion = '${version.replaceAll("'", "\\'")}'`;
  return `ExecutionStatus = 'Running' AND TaskQueue = '${taskQueue.replaceAll("'", "\\'")}'${own} AND TemporalReportedProblems IN (${REPORTED_PROBLEMS.map((p) => `'${p}'`).join(', ')})`;
}

export interface SweepOptions {
  client: Client;
  taskQueue: string;
  /** The worker's own workflow code and converters, made on first need (a bundle from source takes a while). */
  replay: () => Promise<ReplayWorkerOptions>;
  /** Between two looks (default 30 s; KEEL_REPAIR_SWEEP_SECONDS, 0 turns the sweep off). */
  intervalMs: number;
  log: (line: string) => void;
  /** A versioned worker's own version, `<deployment>:<build id>`: only the runs pinned to it. */
  version?: string;
}

export interface Sweep {
  /** One look now: what was found and done (the tests and `keel repair --all` call it). */
  once(): Promise<{ workflowId: string; runId: string; outcome: RepairOutcome }[]>;
  stop(): void;
}

export function sweepIntervalMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = keelEnv(env, 'KEEL_REPAIR_SWEEP_SECONDS');
  if (raw === undefined || raw.trim() === '') return 30_000;
  const seconds = Number(raw);
  if (!Number.isFinite(seconds) || seconds < 0) throw new Error(`KEEL_REPAIR_SWEEP_SECONDS=${JSON.stringify(raw)}: a number of seconds, 0 for no sweep`);
  return seconds * 1000;
}

/**
 * Replays per look, at most: a replay costs CPU, and the runs the server marks are mostly runs
 * whose tasks timed out on a loaded machine (they replay fine). The rest wait for the next look.
 */
export const MAX_REPLAYS_PER_SWEEP = 3;

export function startReplayRepairSweep(options: SweepOptions): Sweep {
  // A run left to a human is not looked at again by this worker (its reason was logged once).
  const left = new Set<string>();
  // A run that replayed is looked at again only once its history has grown: its tasks timed
  // out (a busy worker, a killed one) rather than failed to replay, and replaying it again every
  // look would add to the load that made them time out (seen in `npm run fleet`: 81 runs marked
  // at load 26, each replayed by three workers every 30 s).
  const replayed = new Map<string, number>();
  let unsupported = false;
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;

  const once: Sweep['once'] = async () => {
    const done: { workflowId: string; runId: string; outcome: RepairOutcome }[] = [];
    if (unsupported) return done;
    try {
      let replays = 0;
      for await (const run of options.client.workflow.list({ query: stuckRunsQuery(options.taskQueue, options.version) })) {
        if (left.has(run.runId) || replayed.get(run.runId) === run.historyLength) continue;
        if (replays++ >= MAX_REPLAYS_PER_SWEEP) break;
        const outcome = await repairRun(options.client, await options.replay(), { workflowId: run.workflowId, runId: run.runId });
        done.push({ workflowId: run.workflowId, runId: run.runId, outcome });
        switch (outcome.kind) {
          case 'healthy':
            replayed.set(run.runId, run.historyLength);
            break;
          case 'reset':
            options.log(`keel worker: repaired ${run.workflowId} (run ${run.runId}): ${outcome.reason}; new run ${outcome.newRunId}`);
            break;
          case 'left':
            left.add(run.runId);
            options.log(`keel worker: ${run.workflowId} (run ${run.runId}) keeps failing its workflow tasks and is not repaired automatically: ${outcome.reason}`);
            break;
          default:
            outcome satisfies never;
        }
      }
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (/TemporalReportedProblems/.test(message)) {
        unsupported = true;
        options.log(
          'keel worker: this Temporal server does not mark runs whose workflow tasks keep failing (TemporalReportedProblems; server 1.28+ with system.numConsecutiveWorkflowTaskProblemsToTriggerSearchAttribute set): no automatic replay repair; `keel repair <id>` still works',
        );
      } else {
        // The server or a run may be away for a moment: the next look tries again.
        options.log(`keel worker: replay repair sweep: ${message}`);
      }
    }
    return done;
  };

  const schedule = () => {
    if (stopped || options.intervalMs <= 0) return;
    timer = setTimeout(() => {
      void once().finally(schedule);
    }, options.intervalMs);
    timer.unref();
  };
  schedule();
  return {
    once,
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
