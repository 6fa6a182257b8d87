// How the fuzz and chaos harnesses wait: on what Keel answers, never on how fast the machine
// is. A wait that outlasts its patience is not a FAIL (a busy machine, two CPU hogs beside
// the run, made updates and goals time out and the same seed pass idle); it is recorded as
// outwaited and makes the verdict INCONCLUSIVE. Only a wrong answer is a FAIL.

import type { ChildProcess } from 'node:child_process';
import { setMaxListeners } from 'node:events';

export type Verdict = 'PASS' | 'FAIL' | 'INCONCLUSIVE';

/** How long one wait lasts by default: far beyond any answer seen under load (single workflow tasks took up to 56 s beside two hogs on a machine already at load 15-30). */
export const DEFAULT_PATIENCE_MS = 15 * 60_000;
/** An answer that took longer than this is counted as slow: the report says the machine was busy. */
export const SLOW_MS = 30_000;

/** Something did not answer within the harness's patience: the machine's speed, not a wrong answer. */
export class Outwaited extends Error {
  constructor(what: string, ms: number) {
    super(`${what}: no answer within ${Math.round(ms / 1000)} s (slow machine)`);
    this.name = 'Outwaited';
  }
}

/** FAIL on any wrong answer; else INCONCLUSIVE when something was outwaited; else PASS. */
export function verdictOf(failed: number, outwaited: number): Verdict {
  if (failed > 0) return 'FAIL';
  return outwaited > 0 ? 'INCONCLUSIVE' : 'PASS';
}

/** A sleep that ends early (rejecting) when the run is aborted. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError(signal));
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError(signal!));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function abortError(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error(`aborted: ${String(signal.reason)}`);
}

/**
 * `call(signal)` raced with the patience: throws Outwaited when it has not settled by then,
 * after aborting `signal` so the call (a gRPC long poll, a loop) stops instead of running on.
 * The run's own abort reaches the call too.
 */
export async function patiently<T>(call: (signal: AbortSignal) => Promise<T>, options: { ms: number; what: string; signal?: AbortSignal }): Promise<T> {
  const controller = new AbortController();
  // Every wait in flight listens on the run's signal: a dozen at once is expected, not a leak.
  if (options.signal) setMaxListeners(0, options.signal);
  const onRunAbort = () => controller.abort(options.signal?.reason);
  if (options.signal?.aborted) onRunAbort();
  options.signal?.addEventListener('abort', onRunAbort, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const running = call(controller.signal);
  try {
    return await Promise.race([
      running,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Outwaited(options.what, options.ms)), options.ms);
      }),
    ]);
  } catch (error) {
    // The abandoned call's own rejection (cancelled) is not an answer.
    running.catch(() => undefined);
    throw error;
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onRunAbort);
    controller.abort(new Error('settled'));
  }
}

/**
 * Polls `check` until it returns something other than undefined, however long that takes
 * within the patience (then Outwaited). Errors `retry` accepts (a server restarting, a query
 * that timed out on a busy worker) are polled through; any other error is the answer.
 */
export async function waitUntil<T>(
  check: () => Promise<T | undefined>,
  options: { ms: number; what: string; signal?: AbortSignal; everyMs?: number; retry?: (error: unknown) => boolean },
): Promise<T> {
  const deadline = Date.now() + options.ms;
  let last: unknown;
  for (let every = options.everyMs ?? 250; ; every = Math.min(every * 2, 2_000)) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      if (!options.retry?.(error)) throw error;
      last = error;
    }
    if (Date.now() > deadline) throw new Outwaited(`${options.what}${last ? ` (last: ${String((last as Error).message).slice(0, 160)})` : ''}`, options.ms);
    await sleep(every, options.signal);
  }
}

/**
 * A call made again while it fails in a way `retry` accepts (a call that timed out on the way,
 * a server restarting), until it answers or the patience ends (Outwaited). `scope` runs each
 * wait under the wait's own abort signal (a client's `withAbortSignal`), so an outwaited or
 * aborted call stops instead of polling on.
 */
export function persistently<T>(
  call: () => Promise<T>,
  options: {
    ms: number;
    what: string;
    signal?: AbortSignal;
    retry: (error: unknown) => boolean;
    scope: (stop: AbortSignal, fn: () => Promise<T>) => Promise<T>;
    onRetry?: (error: unknown) => void;
  },
): Promise<T> {
  return patiently(
    (stop) =>
      options.scope(stop, async () => {
        for (;;) {
          try {
            return await call();
          } catch (error) {
            if (stop.aborted || !options.retry(error)) throw error;
            options.onRetry?.(error);
            await sleep(500, stop);
          }
        }
      }),
    { ms: options.ms, what: options.what, ...(options.signal ? { signal: options.signal } : {}) },
  );
}

/** The gRPC status of an error or of its cause (the SDK wraps the service's error). */
export function grpcCode(error: unknown): number | undefined {
  return (error as { code?: number }).code ?? (error as { cause?: { code?: number } }).cause?.code;
}

/** Child processes a harness started: killed when it ends, however it ends (a throw, an abort, a process exit). */
export class Children {
  private readonly live = new Set<ChildProcess>();
  private readonly onExit = () => this.killAll();

  add(child: ChildProcess): void {
    if (this.live.size === 0) process.on('exit', this.onExit);
    this.live.add(child);
    child.once('exit', () => {
      this.live.delete(child);
      if (this.live.size === 0) process.off('exit', this.onExit);
    });
  }

  killAll(): void {
    for (const child of this.live) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}
