// The client side of tracing: a call made inside the caller's own trace (an application's
// request handler with OpenTelemetry set up) carries that trace into the workflow, so Keel's
// spans link to it (@temporalio/interceptors-opentelemetry does the work). A call made outside
// any trace starts none: `keel serve` polls the inbox and the list every few seconds, and with
// tracing on each poll was a trace of its own (2,542 of 2,780 traces in 25 minutes).
// The library is loaded on the first call made inside a span, not with the client: it and the
// OpenTelemetry packages it loads were ~0.1 s of the ~0.8 s of CPU every `keel` command spent
// starting, for the tracing most processes never do.
import { trace } from '@opentelemetry/api';
import type { Next, WorkflowClientInterceptor } from '@temporalio/client';
import type { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';

type Method = 'start' | 'startWithDetails' | 'signal' | 'startUpdate' | 'startUpdateWithStart' | 'signalWithStart' | 'query' | 'terminate' | 'cancel' | 'describe';
type Input<M extends Method> = Parameters<Next<WorkflowClientInterceptor, M>>[0];
type Output<M extends Method> = ReturnType<Next<WorkflowClientInterceptor, M>>;

export class CallerTraceInterceptor implements WorkflowClientInterceptor {
  private inner: Promise<OpenTelemetryWorkflowClientInterceptor> | null = null;

  /** The library's span and header when the caller is inside a span; else the call as it is. */
  private traced<M extends Method>(method: M, input: Input<M>, next: Next<WorkflowClientInterceptor, M>): Output<M> {
    if (trace.getActiveSpan() === undefined) return (next as unknown as (i: Input<M>) => Output<M>)(input);
    // The caller's context survives the await (OpenTelemetry's context manager follows async continuations).
    this.inner ??= import('@temporalio/interceptors-opentelemetry').then((m) => new m.OpenTelemetryWorkflowClientInterceptor());
    return this.inner.then((inner) => (inner[method] as unknown as (i: Input<M>, n: Next<WorkflowClientInterceptor, M>) => Output<M>).call(inner, input, next)) as Output<M>;
  }

  start(input: Input<'start'>, next: Next<WorkflowClientInterceptor, 'start'>) {
    return this.traced('start', input, next);
  }
  startWithDetails(input: Input<'startWithDetails'>, next: Next<WorkflowClientInterceptor, 'startWithDetails'>) {
    return this.traced('startWithDetails', input, next);
  }
  signal(input: Input<'signal'>, next: Next<WorkflowClientInterceptor, 'signal'>) {
    return this.traced('signal', input, next);
  }
  startUpdate(input: Input<'startUpdate'>, next: Next<WorkflowClientInterceptor, 'startUpdate'>) {
    return this.traced('startUpdate', input, next);
  }
  startUpdateWithStart(input: Input<'startUpdateWithStart'>, next: Next<WorkflowClientInterceptor, 'startUpdateWithStart'>) {
    return this.traced('startUpdateWithStart', input, next);
  }
  signalWithStart(input: Input<'signalWithStart'>, next: Next<WorkflowClientInterceptor, 'signalWithStart'>) {
    return this.traced('signalWithStart', input, next);
  }
  query(input: Input<'query'>, next: Next<WorkflowClientInterceptor, 'query'>) {
    return this.traced('query', input, next);
  }
  terminate(input: Input<'terminate'>, next: Next<WorkflowClientInterceptor, 'terminate'>) {
    return this.traced('terminate', input, next);
  }
  cancel(input: Input<'cancel'>, next: Next<WorkflowClientInterceptor, 'cancel'>) {
    return this.traced('cancel', input, next);
  }
  describe(input: Input<'describe'>, next: Next<WorkflowClientInterceptor, 'describe'>) {
    return this.traced('describe', input, next);
  }
}
