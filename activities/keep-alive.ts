// An activity with no progress of its own to report still heartbeats while it runs, so that
// the heartbeat timeout its workflow gives it finds an attempt lost with its worker (kill -9,
// a host gone) within seconds. Without one, Temporal learns of the loss only at the
// attempt's start-to-close timeout: a goal whose setup was taken by a worker killed a moment
// later started two minutes late (the fleet run, seed 45: 131.8 s against 22-25 s for the
// other nine goals).
import { Context } from '@temporalio/activity';

/** Often enough for any heartbeat timeout of a few seconds; the SDK sends at most one per 0.8× that timeout. */
const BEAT_MS = 1_000;

/**
 * Runs `work`, heartbeating (without details) until it settles. Outside an activity (a direct
 * call), and in a local activity, it only runs `work`: a local activity has no heartbeat (the
 * SDK's core answers one with a warning, "Activity heartbeat failed … UnknownActivity").
 */
export async function keepAlive<T>(work: () => Promise<T>, everyMs = BEAT_MS): Promise<T> {
  let context: Context;
  try {
    context = Context.current();
  } catch {
    return work();
  }
  if (context.info.isLocal) return work();
  const timer = setInterval(() => context.heartbeat(), everyMs);
  try {
    context.heartbeat();
    return await work();
  } finally {
    clearInterval(timer);
  }
}
