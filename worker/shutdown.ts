// How a worker stops (SIGTERM from a deploy, SIGINT): it stops polling at once, lets running
// activities finish for a grace time — a model call that ends inside it is not paid for
// twice — then cancels the rest, which Temporal retries on another worker. The compose
// file's stop_grace_period must be longer than this grace time, or Docker kills the worker
// before it has finished.
import { msToNumber } from '@temporalio/common/lib/time';
import { keelEnv } from '../shared/env';

export const DEFAULT_SHUTDOWN_GRACE_MS = 30_000;

export class ShutdownConfigError extends Error {
  override readonly name = 'ShutdownConfigError';
}

/** KEEL_SHUTDOWN_GRACE as milliseconds: `30s`, `2m`, `1500ms` or a number of milliseconds. */
export function shutdownGraceMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = keelEnv(env, 'KEEL_SHUTDOWN_GRACE')?.trim();
  if (raw === undefined) return DEFAULT_SHUTDOWN_GRACE_MS;
  let ms: number;
  try {
    ms = /^\d+$/.test(raw) ? Number(raw) : msToNumber(raw as Parameters<typeof msToNumber>[0]);
  } catch {
    ms = Number.NaN;
  }
  if (!Number.isFinite(ms) || ms < 0) throw new ShutdownConfigError(`KEEL_SHUTDOWN_GRACE must be a duration such as 30s, 2m or 1500ms; got "${raw}"`);
  return ms;
}
