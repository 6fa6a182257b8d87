// `keel check-replay`'s engine: replays histories against one build's workflow code and says,
// per history, whether it replays and, when not, at which event it breaks. A CI job runs it
// before a deploy: the saved histories (test/histories) and, with --from-server, the open runs
// of the task queue the build will take over. A history that breaks here would break the same
// way on a worker of that build (docs/deployment.md, "Versions and upgrades").
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import type proto from '@temporalio/proto';
import { type ReplayWorkerOptions, Worker } from '@temporalio/worker';
import { failedEventId } from '../machines/replay-repair';

type History = proto.temporal.api.history.v1.IHistory;

/** The workflow types Keel's bundle registers; a saved history of any other type is not Keel's to check. */
export const KEEL_WORKFLOW_TYPES: readonly string[] = ['sessionWorkflow', 'goalWorkflow', 'agentWorkflow', 'keelStoreProbe'];

/** One history to replay: where it came from (a file, or a run on the server), and the run's own workflow id. */
export interface HistorySource {
  readonly name: string;
  readonly workflowId: string;
  readonly workflowType: string;
  readonly history: History;
}

export type ReplayCheck =
  | { readonly name: string; readonly workflowType: string; readonly outcome: 'replays' }
  | { readonly name: string; readonly workflowType: string; readonly outcome: 'breaks'; readonly nondeterminism: boolean; readonly eventId: number | null; readonly message: string };

export interface ReplayReport {
  readonly checked: readonly ReplayCheck[];
  /** Histories of workflow types that are not Keel's (test/histories/smoke is a fixture's). */
  readonly skipped: readonly { readonly name: string; readonly workflowType: string }[];
  readonly broken: number;
}

interface StartedEvent {
  workflowExecutionStartedEventAttributes?: { workflowId?: string; workflowType?: { name?: string } };
}

/** Every *.json history under `dir` (recursively), named by its path relative to `dir`. */
export function historiesFromDirectory(dir: string): HistorySource[] {
  const files: string[] = [];
  const walk = (at: string) => {
    for (const entry of readdirSync(at).sort()) {
      const full = path.join(at, entry);
      if (statSync(full).isDirectory()) walk(full);
      else if (entry.endsWith('.json')) files.push(full);
    }
  };
  walk(dir);
  return files.map((file) => {
    const history = JSON.parse(readFileSync(file, 'utf8')) as History;
    const started = (history.events?.[0] as StartedEvent | undefined)?.workflowExecutionStartedEventAttributes;
    const name = path.relative(dir, file);
    return { name, workflowId: started?.workflowId ?? name, workflowType: started?.workflowType?.name ?? 'unknown', history };
  });
}

/**
 * The runs a query finds on the server (default: the open runs of `taskQueue`), with their
 * histories: what the new build would have to replay if they moved to it.
 */
export async function historiesFromServer(client: Client, options: { taskQueue: string; query?: string; limit: number }): Promise<HistorySource[]> {
  const query = options.query ?? `TaskQueue = ${JSON.stringify(options.taskQueue)} AND ExecutionStatus = "Running"`;
  const found: HistorySource[] = [];
  for await (const run of client.workflow.list({ query })) {
    if (found.length >= options.limit) break;
    const history = await client.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
    found.push({ name: `${run.workflowId} (run ${run.runId})`, workflowId: run.workflowId, workflowType: run.type, history });
  }
  return found;
}

/** Replays each history of a Keel workflow type with `replay`'s code, one replay worker for all. */
export async function checkReplay(replay: ReplayWorkerOptions, sources: readonly HistorySource[]): Promise<ReplayReport> {
  const keel = sources.filter((s) => KEEL_WORKFLOW_TYPES.includes(s.workflowType));
  const skipped = sources.filter((s) => !KEEL_WORKFLOW_TYPES.includes(s.workflowType)).map(({ name, workflowType }) => ({ name, workflowType }));
  const checked: ReplayCheck[] = [];
  if (keel.length > 0) {
    // The replay worker replays one history at a time, in order: results pair with inputs by position.
    const input = keel.map((s) => ({ workflowId: s.workflowId, history: s.history }));
    let i = 0;
    for await (const result of Worker.runReplayHistories({ ...replay, replayName: 'keel-check-replay' }, input)) {
      const source = keel[i++]!;
      if (!result.error) {
        checked.push({ name: source.name, workflowType: source.workflowType, outcome: 'replays' });
        continue;
      }
      const message = result.error.message;
      const nondeterminism = result.error.name === 'DeterminismViolationError' || /nondeterminism/i.test(message);
      checked.push({ name: source.name, workflowType: source.workflowType, outcome: 'breaks', nondeterminism, eventId: failedEventId(message), message });
    }
    // A replay worker that stopped early leaves the rest unchecked: they count as broken, not as passed.
    for (const source of keel.slice(i)) checked.push({ name: source.name, workflowType: source.workflowType, outcome: 'breaks', nondeterminism: false, eventId: null, message: 'not replayed: the replay worker stopped before it' });
  }
  return { checked, skipped, broken: checked.filter((c) => c.outcome === 'breaks').length };
}

/** The report as lines for a person (or a CI log): each broken history, where, and why; then the count. */
export function replayReportLines(report: ReplayReport): string[] {
  const lines: string[] = [];
  for (const c of report.checked) {
    if (c.outcome !== 'breaks') continue;
    const where = c.eventId === null ? '' : ` at event ${c.eventId}`;
    lines.push(`BREAKS ${c.name} (${c.workflowType})${where}: ${c.nondeterminism ? 'nondeterminism: ' : ''}${firstLine(c.message)}`);
  }
  const replayed = report.checked.length - report.broken;
  const skipped = report.skipped.length > 0 ? `; ${report.skipped.length} skipped (not a Keel workflow type: ${[...new Set(report.skipped.map((s) => s.workflowType))].join(', ')})` : '';
  lines.push(`${replayed} of ${report.checked.length} histories replay with this build${report.broken > 0 ? `, ${report.broken} break` : ''}${skipped}`);
  return lines;
}

/** The SDK's own sentence when there is one (`[TMPRL1100] Nondeterminism error: … HistoryEvent(id: 5, …)`), else the first line. */
function firstLine(message: string): string {
  const line = /\[TMPRL\d+\][^"]*/.exec(message)?.[0] ?? message.split('\n')[0] ?? '';
  return line.length > 400 ? `${line.slice(0, 400)}…` : line;
}
