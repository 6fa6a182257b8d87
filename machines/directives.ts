// Directives several machines share: the runner executes them mechanically. Timer and
// activity ids are deterministic, so a runner can key its timers and cancellation scopes
// on them, and a late timer or result is recognised as stale.

/** Start (or replace) a durable timer; when it fires, apply `{ type: 'timer_fired', timerId }`. */
export interface StartTimer {
  readonly type: 'start_timer';
  readonly timerId: string;
  readonly durationMs: number;
}

export interface CancelTimer {
  readonly type: 'cancel_timer';
  readonly timerId: string;
}

/** Cancel an in-flight activity (Temporal cancellation) that an earlier directive started. */
export interface CancelActivity {
  readonly type: 'cancel_activity';
  readonly activityId: string;
}

export const startTimer = (timerId: string, durationMs: number): StartTimer => ({ type: 'start_timer', timerId, durationMs });
export const cancelTimer = (timerId: string): CancelTimer => ({ type: 'cancel_timer', timerId });
export const cancelActivity = (activityId: string): CancelActivity => ({ type: 'cancel_activity', activityId });
