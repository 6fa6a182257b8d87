// The worker's half of workflow tracing (workflows/trace.ts): span keys become ids, the
// spans workflows report through the `keelTrace` sink are exported like any other span,
// and an activity's `keel-trace` header says which span its model or tool call hangs under.
//
// Ids are hashes of the keys, so every worker — the one that ran the workflow, the one
// that replays it after a crash, the one that runs its activity — names a span alike,
// and a goal's spans form one trace whichever workers served it.
//
// Only OpenTelemetry's API is imported here: the SDK's pieces (a random id generator, the W3C
// propagator) come in a `WorkflowTracing` that worker/telemetry.ts builds when tracing is on,
// so that a worker without it does not load the SDK (~0.2 s of CPU at every start).
import { createHash } from 'node:crypto';
import { type Context, type Link, ROOT_CONTEXT, type SpanContext, SpanStatusCode, TraceFlags, trace, type TextMapPropagator, type Tracer } from '@opentelemetry/api';
import type { IdGenerator } from '@opentelemetry/sdk-trace-base';
import { defaultPayloadConverter, type Headers } from '@temporalio/common';
import type { InjectedSinks } from '@temporalio/worker';
import { type Carrier, type FinishedSpan, type KeelTraceSinks, TRACE_HEADER, type SpanRef } from '../workflows/trace-header';

const hash = (text: string, hexChars: number) => createHash('sha256').update(text).digest('hex').slice(0, hexChars);

export const traceIdOf = (traceKey: string): string => hash(`keel trace\0${traceKey}`, 32);
export const spanIdOf = (traceKey: string, spanKey: string): string => hash(`keel span\0${traceKey}\0${spanKey}`, 16);

/** The remote span a key names, as a parent context. */
export function contextOf(ref: SpanRef): Context {
  const parent: SpanContext = { traceId: traceIdOf(ref.trace), spanId: spanIdOf(ref.trace, ref.span), traceFlags: TraceFlags.SAMPLED, isRemote: true };
  return trace.setSpanContext(ROOT_CONTEXT, parent);
}

/** The span an activity's header names (set by workflows/trace-interceptors.ts), or null. */
export function activityParent(headers: Headers | undefined): Context | null {
  const payload = headers?.[TRACE_HEADER];
  if (!payload) return null;
  try {
    const ref = defaultPayloadConverter.fromPayload<Partial<SpanRef>>(payload);
    return typeof ref?.trace === 'string' && typeof ref.span === 'string' ? contextOf({ trace: ref.trace, span: ref.span }) : null;
  } catch {
    return null;
  }
}

/**
 * Random ids, except for the one span being started with ids derived from its keys. The
 * tracer asks for ids synchronously inside startSpan, so setting them just before is safe.
 */
export class KeelIdGenerator implements IdGenerator {
  /** `random`: the SDK's generator (`RandomIdGenerator`), for every span not being forced. */
  constructor(private readonly random: IdGenerator) {}

  private forced: { traceId: string; spanId: string } | null = null;

  generateTraceId(): string {
    return this.forced?.traceId ?? this.random.generateTraceId();
  }

  generateSpanId(): string {
    return this.forced?.spanId ?? this.random.generateSpanId();
  }

  with<T>(ids: { traceId: string; spanId: string }, run: () => T): T {
    this.forced = ids;
    try {
      return run();
    } finally {
      this.forced = null;
    }
  }
}

/** What exporting the spans workflows report takes: built by startTelemetry when tracing is on. */
export interface WorkflowTracing {
  tracer: Tracer;
  ids: KeelIdGenerator;
  /** Reads a link's W3C `traceparent` (the SDK's `W3CTraceContextPropagator`). */
  propagator: TextMapPropagator;
}

const getter = { get: (c: Carrier, key: string) => c[key], keys: (c: Carrier) => Object.keys(c) };

function linkOf(propagator: TextMapPropagator, carrier: Carrier): Link | null {
  const context = trace.getSpanContext(propagator.extract(ROOT_CONTEXT, carrier, getter));
  return context && trace.isSpanContextValid(context) ? { context } : null;
}

/** Exports a span a workflow reported, with the ids its keys name. */
export function exportWorkflowSpan({ tracer, ids, propagator }: WorkflowTracing, span: FinishedSpan): void {
  const traceId = traceIdOf(span.ref.trace);
  const spanId = spanIdOf(span.ref.trace, span.ref.span);
  const parent = span.parent === null ? ROOT_CONTEXT : contextOf({ trace: span.ref.trace, span: span.parent });
  const links = span.links.map((carrier) => linkOf(propagator, carrier)).filter((l): l is Link => l !== null);
  const started = ids.with({ traceId, spanId }, () => tracer.startSpan(span.name, { startTime: span.start, attributes: span.attributes, links }, parent));
  if (span.error !== undefined) {
    started.setStatus({ code: SpanStatusCode.ERROR, message: span.error });
    started.setAttribute('error.type', span.error);
  }
  started.end(span.end);
}

/** The `keelTrace` sink: exports when tracing is on, does nothing when it is off (the workflow calls it either way). */
export function keelTraceSink(tracing: WorkflowTracing | null): InjectedSinks<KeelTraceSinks> {
  return {
    keelTrace: {
      spans: {
        callDuringReplay: false,
        fn(_info, spans) {
          if (tracing) for (const span of spans) exportWorkflowSpan(tracing, span);
        },
      },
    },
  };
}
