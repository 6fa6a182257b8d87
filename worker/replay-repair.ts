// Finds a run the SDK can no longer replay, decides by machines/replay-repair.ts whether it is
// the SDK's update-ordering fault, and resets it to before the misordered task — by the
// worker's sweep (worker/replay-repair-sweep.ts) or `keel repair <id>`. Its only I/O: the
// run's history, a local replay of it with the worker's own workflow code, and one reset.
import { createHash } from 'node:crypto';
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { type ReplayWorkerOptions, Worker } from '@temporalio/worker';
import { failedEventId, type HistoryMark, planReplayRepair, REPAIR_REASON_PREFIX, type ReplayRepairPlan } from '../machines/replay-repair';

type Long = NonNullable<proto.temporal.api.history.v1.IHistoryEvent['eventId']>;
type History = proto.temporal.api.history.v1.IHistory;
type HistoryEvent = proto.temporal.api.history.v1.IHistoryEvent;
const EventType = proto.temporal.api.enums.v1.EventType;

export type ReplayDiagnosis =
  | { readonly kind: 'replays' }
  | { readonly kind: 'nondeterminism'; readonly message: string; readonly failedAt: number | null; readonly plan: ReplayRepairPlan }
  | { readonly kind: 'replay-error'; readonly message: string };

export type RepairOutcome =
  | { readonly kind: 'healthy' }
  | { readonly kind: 'reset'; readonly toEventId: number; readonly newRunId: string; readonly reason: string }
  | { readonly kind: 'left'; readonly reason: string };

export interface RunRef {
  readonly workflowId: string;
  readonly runId?: string;
}

/** The events the rules read, by kind. */
export function historyMarks(events: readonly HistoryEvent[]): HistoryMark[] {
  return events.map((e) => ({ id: Number(e.eventId ?? 0), kind: markKind(e) }));
}

/** The event types the rules tell apart; every other event is 'other'. */
const MARKS = new Map<proto.temporal.api.enums.v1.EventType, HistoryMark['kind']>([
  [EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, 'task-scheduled'],
  [EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED, 'task-started'],
  [EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, 'task-completed'],
  [EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT, 'task-timed-out'],
  [EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED, 'task-failed'],
  [EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED, 'update-accepted'],
]);

function markKind(e: HistoryEvent): HistoryMark['kind'] {
  const kind = MARKS.get(eventTypeOf(e)) ?? 'other';
  // A reset ends the task it resets to with a failure that carries the reset's reason.
  if (kind === 'task-failed' && (e.workflowTaskFailedEventAttributes?.failure?.message ?? '').startsWith(REPAIR_REASON_PREFIX)) return 'repair-reset';
  return kind;
}

/** A history read from JSON (a saved file) names its types; one fetched from the server numbers them. */
function eventTypeOf(e: HistoryEvent): proto.temporal.api.enums.v1.EventType {
  const t = e.eventType as unknown;
  const type = typeof t === 'string' ? (EventType as unknown as Record<string, number>)[t] : Number(t ?? 0);
  return type ?? EventType.EVENT_TYPE_UNSPECIFIED;
}

/** Replays `history` with the worker's workflow code; what went wrong, if anything. */
export async function diagnoseHistory(replay: ReplayWorkerOptions, history: History, workflowId: string): Promise<ReplayDiagnosis> {
  try {
    await Worker.runReplayHistory(replay, history, workflowId);
    return { kind: 'replays' };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (!isNondeterminism(error)) return { kind: 'replay-error', message };
    const failedAt = failedEventId(message);
    const plan: ReplayRepairPlan =
      failedAt === null ? { kind: 'leave', reason: `the nondeterminism error names no history event: ${message}` } : planReplayRepair(historyMarks(history.events ?? []), failedAt);
    return { kind: 'nondeterminism', message, failedAt, plan };
  }
}

function isNondeterminism(error: unknown): boolean {
  return error instanceof Error && (error.name === 'DeterminismViolationError' || /nondeterminism/i.test(error.message));
}

/**
 * Diagnoses one run and, when the rules say so, resets it. A reset is made only after the
 * history up to the reset point was replayed without error here: the new run is known to
 * replay. Several workers may repair the same run at once: the request id is the run's and the
 * event's, so the server makes one reset of them.
 */
export async function repairRun(client: Client, replay: ReplayWorkerOptions, run: RunRef, options: { dryRun?: boolean } = {}): Promise<RepairOutcome> {
  const handle = client.workflow.getHandle(run.workflowId, run.runId);
  const described = await handle.describe();
  const runId = described.runId;
  const history = await client.workflow.getHandle(run.workflowId, runId).fetchHistory();
  const diagnosis = await diagnoseHistory(replay, history, run.workflowId);
  switch (diagnosis.kind) {
    case 'replays':
      return { kind: 'healthy' };
    case 'replay-error':
      return { kind: 'left', reason: `its history does not replay, and not for the SDK's known reason: ${diagnosis.message}` };
    case 'nondeterminism': {
      const plan = diagnosis.plan;
      if (plan.kind === 'leave') return { kind: 'left', reason: plan.reason };
      const prefix = { events: (history.events ?? []).filter((e) => Number(e.eventId) < plan.toEventId) };
      const check = await diagnoseHistory(replay, prefix, run.workflowId);
      if (check.kind !== 'replays') return { kind: 'left', reason: `the history before event ${plan.toEventId} does not replay either (${check.message}): not the SDK's update-ordering fault` };
      if (options.dryRun) return { kind: 'reset', toEventId: plan.toEventId, newRunId: '', reason: plan.reason };
      const requestId = createHash('sha256').update(`${runId}:${plan.toEventId}`).digest('hex').slice(0, 32);
      const response: proto.temporal.api.workflowservice.v1.IResetWorkflowExecutionResponse = await client.workflowService.resetWorkflowExecution({
        namespace: client.options.namespace,
        workflowExecution: { workflowId: run.workflowId, runId },
        reason: plan.reason,
        // protobufjs takes a number for an int64 field; its generated types name only Long.
        workflowTaskFinishEventId: plan.toEventId as unknown as Long,
        requestId,
        // The signals and updates after the reset point are applied to the new run again (the default, said here on purpose).
        resetReapplyExcludeTypes: [],
      });
      return { kind: 'reset', toEventId: plan.toEventId, newRunId: response.runId ?? '', reason: plan.reason };
    }
    default:
      return diagnosis satisfies never;
  }
}
