// How much a tool call run as a local activity may do before it gives the work to an activity.
//
// A local activity runs inside the workflow task that asked for it: while it runs, an interrupt,
// an approval or a message waits for the task to end, and nothing shows the call in the Temporal
// UI. So a local call is held to a budget of bytes scanned and of time; a call that would go
// past it stops and fails with LOCAL_BUDGET_EXCEEDED, and the workflow runs the same call again
// as an ordinary activity (workflows/turn-tools.ts), which heartbeats, hears of a cancel at once
// and shows in the UI. A read asking for ten lines of a 60 MB file scans a few kilobytes and
// stays local; one asking for lines at the end of it goes to an activity. Pure: the workflow and
// the activities both read it.

export interface LocalBudget {
  /** Bytes a call may scan (read from disk, whatever it keeps of them). */
  readonly bytes: number;
  /** Wall time a call may take, from its start. */
  readonly ms: number;
}

/**
 * 4 MiB is 10–20 ms of reading and line-splitting on an idle machine, so the bytes bound the
 * task there. The time is for a slow disk and a starved CPU: a control waits at most this long
 * on one local call, and a call that takes longer is done again by an activity. 200 ms (the
 * interrupt target at one session) was tried first: at load 28 on 2 cores the bench's one-chunk
 * reads passed it every few rounds, and each went again as an activity, adding work to a
 * machine already starved; 500 ms keeps that rare and stays within the 1 s a control may take
 * at 50 sessions.
 */
export const LOCAL_BUDGET: LocalBudget = { bytes: 4 * 1024 * 1024, ms: 500 };

/** The failure type a local call ends with when its budget ran out (non-retryable). */
export const LOCAL_BUDGET_EXCEEDED = 'KeelLocalBudgetExceeded';

/** Whether a local call that has scanned `bytes` since `elapsedMs` ago may go on. */
export function withinLocalBudget(budget: LocalBudget, spent: { bytes: number; elapsedMs: number }): boolean {
  return spent.bytes <= budget.bytes && spent.elapsedMs <= budget.ms;
}

/**
 * Whether a local call's failure is its budget running out, so the call runs again as an
 * activity. The SDK wraps what the activity threw (an ApplicationFailure of our type) as the
 * cause of an ActivityFailure; read by shape, so that this module stays free of the SDK.
 */
export function isLocalBudgetExceeded(error: unknown): boolean {
  for (let at: unknown = error, depth = 0; at !== null && typeof at === 'object' && depth < 4; depth += 1) {
    if ('type' in at && at.type === LOCAL_BUDGET_EXCEEDED) return true;
    at = 'cause' in at ? at.cause : undefined;
  }
  return false;
}
