// What a workflow's trace context looks like on the wire and in the `keelTrace` sink:
// shared by the workflows (workflows/trace.ts) and the worker (worker/trace-export.ts).
// No imports: the worker reads it without loading workflow code.

/** The header that carries a workflow's current span to its activities and children. */
export const TRACE_HEADER = 'keel-trace';
/** The header Temporal's OpenTelemetry client interceptor writes: the caller's W3C trace context. */
export const CALLER_HEADER = '_tracer-data';

/** A span by its keys; the worker derives the ids. */
export interface SpanRef {
  trace: string;
  span: string;
}

export type SpanAttributes = Record<string, string | number | boolean | string[]>;
/** W3C trace context (`traceparent`, `tracestate`) of a request, for links. */
export type Carrier = Record<string, string>;

export interface FinishedSpan {
  ref: SpanRef;
  /** The parent's span key, in the same trace; null for a trace's root. */
  parent: string | null;
  name: string;
  /** Workflow time, ms since the epoch. */
  start: number;
  end: number;
  attributes: SpanAttributes;
  /** Requests that acted on this span (who started it, who approved): links, not parents. */
  links: Carrier[];
  error?: string | undefined;
}

/** The sink (a type, not an interface: Temporal's `Sinks` needs its implicit index signature). */
export type KeelTraceSinks = {
  keelTrace: {
    /** The spans that ended in one activation. */
    spans(spans: FinishedSpan[]): void;
  };
};

