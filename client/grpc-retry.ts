// The Temporal client's gRPC retry (@temporalio/client makeGrpcRetryInterceptor, with its
// default backoff), made safe to close under. The SDK's interceptor retries a failed call
// from a timer; if the connection was closed in between, the timer's new call throws
// "Channel has been shut down" in that timer: an uncaught exception that ends the process
// (`npm run demo` exited 1 instead of 143 on SIGTERM when a query was being retried as it
// shut down). Here close() first stops new retries (a call failing from then on fails with
// its own error, to its caller), then waits for the retries already scheduled to fire (at
// most one backoff, ≤ 6 s) on the still-open channel, and only then the channel closes.
// Besides the SDK's retryable codes it retries an update or query the server turned away while
// the workflow's task is in failed state (taskInFailedState): under load, not an answer.
import { Connection, type ConnectionOptions, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';

type Interceptor = NonNullable<ConnectionOptions['interceptors']>[number];

/**
 * The server turns an update (and a query) away, before admitting it, while the workflow's task
 * is being retried after failing or timing out at least twice: FAILED_PRECONDITION
 * ("WorkflowNotReady": "Unable to perform workflow execution update due to Workflow Task in
 * failed state."). On a starved worker that is a passing state (the next attempt completes),
 * and the call was not taken, so it is asked again — for up to ~70 s (20 attempts, the SDK's
 * backoff capped at 5 s), not the ~20 s of the default 10: a timed-out task is retried after its
 * 10 s timeout. A workflow whose code keeps failing stays so: its caller gets the error then.
 */
export function taskInFailedState(status: { code: number; details?: string }): boolean {
  return status.code === FAILED_PRECONDITION && /Workflow ?Task (is )?in failed state/i.test(status.details ?? '');
}
const FAILED_PRECONDITION = 9;
const FAILED_STATE_ATTEMPTS = 20;

export class ClosableRetry {
  private closing = false;
  /** Retries scheduled (a backoff timer running) and not yet started. */
  private scheduled = 0;
  private idle: (() => void) | null = null;
  readonly interceptor: Interceptor;

  /** `onRetry`: told of each retry scheduled, with the status that caused it (tests, logs). */
  constructor(private readonly onRetry?: (status: { code: number; details?: string }) => void) {
    const base = defaultGrpcRetryOptions();
    const retry = makeGrpcRetryInterceptor({
      retryableDecider: (attempt, status) => !this.closing && (taskInFailedState(status) ? attempt < FAILED_STATE_ATTEMPTS : base.retryableDecider(attempt, status)),
      // Called exactly when the SDK schedules a retry's timer (after the decider said yes).
      delayFunction: (attempt, status) => {
        this.scheduled++;
        this.onRetry?.(status);
        return base.delayFunction(attempt, status);
      },
    });
    this.interceptor = (options, nextCall) => {
      let attempts = 0;
      return retry(options, (callOptions) => {
        // The first call is the call itself; every later one is a scheduled retry starting.
        if (++attempts > 1) this.started();
        return nextCall(callOptions);
      });
    };
  }

  /** Refuses retries from now on and resolves when no retry is waiting on its timer. */
  quiesce(): Promise<void> {
    this.closing = true;
    if (this.scheduled === 0) return Promise.resolve();
    return new Promise((resolve) => (this.idle = resolve));
  }

  private started() {
    this.scheduled = Math.max(0, this.scheduled - 1);
    if (this.scheduled === 0 && this.idle) {
      const idle = this.idle;
      this.idle = null;
      idle();
    }
  }
}

/**
 * A Temporal `Connection` with the SDK's default retry, whose close() first waits for the
 * retries already scheduled (ClosableRetry). What every Keel process that closes its own
 * connection uses: the SDK client, the tests, the chaos harness and the benchmarks.
 */
export class ClosableConnection extends Connection {
  private retry: ClosableRetry | null = null;

  static override async connect(options?: ConnectionOptions, onRetry?: (status: { code: number; details?: string }) => void): Promise<ClosableConnection> {
    const retry = new ClosableRetry(onRetry);
    const connection = (await super.connect({ ...options, interceptors: [retry.interceptor] })) as ClosableConnection;
    connection.retry = retry;
    return connection;
  }

  override async close(): Promise<void> {
    await this.retry?.quiesce();
    await super.close();
  }
}
