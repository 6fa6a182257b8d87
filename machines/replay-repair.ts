// A run the Temporal SDK itself can no longer replay, and the one case Keel repairs on its own.
//
// The SDK (TypeScript 1.23 and 1.24, its Rust core) can write a history it then refuses to
// replay: a workflow task that timed out (its worker killed, or too slow under load) is retried
// while an update waits; the retry's worker, holding the run in its cache, completes it with
// the commands of the other jobs first and the update's acceptance after them. Any later task
// that replays the history from the start — a worker restart, a cache eviction — builds the
// acceptance first and fails with a nondeterminism error ("Update machine does not handle this
// event: HistoryEvent(id: N, ActivityTaskScheduled)"; sdk-rust#943 and #1146). Every later
// task fails the same way: the run is stuck for good until someone resets it. One such run in
// `npm run fleet` (seed 4501) needed a human.
//
// Resetting the run to that task's completion drops the misordered commands and nothing
// before them: the new run replays every earlier event (the tool results stay; no command runs
// again), the server re-applies the signals and updates that came after, and the task is done
// again, in a consistent order. The workflow code is the same, so the new run goes on as the
// old one would have.
//
// Only that shape is repaired. A nondeterminism error anywhere else means the workflow code and
// the history disagree (a deploy changed it without a patch): resetting would hide a bug and
// might run the changed code over half a turn, so it is left to a human, with the reason.
// These rules decide; worker/replay-repair.ts reads the history, replays it and resets.

/** What the rules need of one history event. */
export interface HistoryMark {
  readonly id: number;
  readonly kind: 'task-scheduled' | 'task-started' | 'task-completed' | 'task-timed-out' | 'task-failed' | 'update-accepted' | 'repair-reset' | 'other';
}

export type ReplayRepairPlan =
  | { readonly kind: 'reset'; readonly toEventId: number; readonly reason: string }
  | { readonly kind: 'leave'; readonly reason: string };

/** More repairs than this in one run's chain is no longer a blip: a human looks. */
export const MAX_REPAIRS_PER_RUN = 5;

/** The reset reason Keel writes, so that a later repair can count the earlier ones (and a human reading the history sees who reset it and why). */
export const REPAIR_REASON_PREFIX = 'keel repair:';

/** The event id a nondeterminism error names ("HistoryEvent(id: 197, …"), if it names one. */
export function failedEventId(message: string): number | null {
  const match = /HistoryEvent\(id: (\d+)/.exec(message);
  return match ? Number(match[1]) : null;
}

/**
 * Whether the run whose history is `events` failed to replay at `failedAt` in the SDK's known
 * update-ordering way, and if so where to reset it.
 */
export function planReplayRepair(events: readonly HistoryMark[], failedAt: number): ReplayRepairPlan {
  const repairs = events.filter((e) => e.kind === 'repair-reset').length;
  if (repairs >= MAX_REPAIRS_PER_RUN) {
    return { kind: 'leave', reason: `this run was already repaired ${repairs} times; a fault that keeps coming back needs a human` };
  }
  // The task whose commands the failing event belongs to: the last completion before it.
  const completedAt = events.findLastIndex((e) => e.kind === 'task-completed' && e.id < failedAt);
  if (completedAt < 0) return { kind: 'leave', reason: `event ${failedAt} is in the run's first workflow task: not the SDK's update-ordering fault` };
  const completed = events[completedAt]!;
  // Its commands: from the completion to the next task's scheduling (or the end).
  const nextScheduled = events.findIndex((e, i) => i > completedAt && e.kind === 'task-scheduled');
  const commands = events.slice(completedAt + 1, nextScheduled < 0 ? undefined : nextScheduled);
  if (!commands.some((e) => e.id === failedAt)) {
    return { kind: 'leave', reason: `event ${failedAt} is not a command of a completed workflow task: not the SDK's update-ordering fault` };
  }
  if (!commands.some((e) => e.kind === 'update-accepted')) {
    return { kind: 'leave', reason: `the workflow task completed at event ${completed.id} accepted no update: the workflow code and its history disagree (a change without a patch?)` };
  }
  // That task was a retry: since the task completed before it, one timed out or failed.
  const previousCompleted = events.findLastIndex((e, i) => i < completedAt && e.kind === 'task-completed');
  const between = events.slice(previousCompleted + 1, completedAt);
  if (!between.some((e) => e.kind === 'task-timed-out' || e.kind === 'task-failed')) {
    return { kind: 'leave', reason: `the workflow task completed at event ${completed.id} was not a retry after a timed-out or failed one: the workflow code and its history disagree (a change without a patch?)` };
  }
  return {
    kind: 'reset',
    toEventId: completed.id,
    reason: `${REPAIR_REASON_PREFIX} the SDK cannot replay the update accepted by the retried workflow task completed at event ${completed.id} (nondeterminism at event ${failedAt}); that task is done again, signals and updates re-applied`,
  };
}
