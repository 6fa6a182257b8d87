// The worker's half of workflow tracing: a span a workflow reports gets the ids its keys
// name — on any worker, every time — its parent by key, and its links from W3C contexts.
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { InMemorySpanExporter, RandomIdGenerator, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { defaultPayloadConverter } from '@temporalio/common';
import { trace } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { activityParent, exportWorkflowSpan, KeelIdGenerator, spanIdOf, traceIdOf } from '../../worker/trace-export';
import { TRACE_HEADER, type FinishedSpan } from '../../workflows/trace-header';

function provider() {
  const exporter = new InMemorySpanExporter();
  const ids = new KeelIdGenerator(new RandomIdGenerator());
  const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)], idGenerator: ids }).getTracer('test');
  return { exporter, ids, tracer, tracing: { tracer, ids, propagator: new W3CTraceContextPropagator() } };
}

const span = (over: Partial<FinishedSpan> = {}): FinishedSpan => ({
  ref: { trace: 'goal:g-1:run-1', span: 'approval:toolu_1' },
  parent: 'agent:g-1/task-a/1',
  name: 'await_approval write_file',
  start: 1_700_000_000_000,
  end: 1_700_000_004_000,
  attributes: { 'keel.approval.decision': 'approved' },
  links: [{ traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }],
  ...over,
});

describe('trace export', () => {
  it('derives the same 128-bit trace id and 64-bit span ids from the same keys, different ones from others', () => {
    expect(traceIdOf('goal:g-1:run-1')).toMatch(/^[0-9a-f]{32}$/);
    expect(spanIdOf('goal:g-1:run-1', 'goal')).toMatch(/^[0-9a-f]{16}$/);
    expect(traceIdOf('goal:g-1:run-1')).toBe(traceIdOf('goal:g-1:run-1'));
    expect(traceIdOf('goal:g-1:run-2')).not.toBe(traceIdOf('goal:g-1:run-1'));
    expect(spanIdOf('goal:g-1:run-1', 'goal')).not.toBe(spanIdOf('goal:g-1:run-2', 'goal'));
  });

  it('exports a reported span with the ids of its keys, its parent by key, its times, attributes and links', () => {
    const { exporter, tracer, tracing } = provider();
    exportWorkflowSpan(tracing, span());
    exportWorkflowSpan(tracing, span({ ref: { trace: 'goal:g-1:run-1', span: 'goal' }, parent: null, name: 'invoke_agent keel-goal', links: [], error: 'cancelled' }));
    const [wait, root] = exporter.getFinishedSpans();
    expect(wait!.spanContext()).toMatchObject({ traceId: traceIdOf('goal:g-1:run-1'), spanId: spanIdOf('goal:g-1:run-1', 'approval:toolu_1') });
    expect(wait!.parentSpanId).toBe(spanIdOf('goal:g-1:run-1', 'agent:g-1/task-a/1'));
    expect(wait!.startTime).toEqual([1_700_000_000, 0]);
    expect(wait!.endTime).toEqual([1_700_000_004, 0]);
    expect(wait!.attributes).toEqual({ 'keel.approval.decision': 'approved' });
    expect(wait!.links.map((l) => l.context.traceId)).toEqual(['0af7651916cd43dd8448eb211c80319c']);
    // A root: the trace id from the keys too, no parent; an error ends it with error status.
    expect(root!.spanContext()).toMatchObject({ traceId: traceIdOf('goal:g-1:run-1'), spanId: spanIdOf('goal:g-1:run-1', 'goal') });
    expect(root!.parentSpanId).toBeUndefined();
    expect(root!.status).toMatchObject({ code: 2, message: 'cancelled' });
    // Spans started afterwards get random ids again.
    const other = tracer.startSpan('other');
    expect(other.spanContext().traceId).not.toBe(traceIdOf('goal:g-1:run-1'));
    other.end();
  });

  it("reads an activity's parent from its keel-trace header, and ignores a missing or malformed one", () => {
    const parent = activityParent({ [TRACE_HEADER]: defaultPayloadConverter.toPayload({ trace: 'goal:g-1:run-1', span: 'goal' }) });
    expect(trace.getSpanContext(parent!)).toMatchObject({ traceId: traceIdOf('goal:g-1:run-1'), spanId: spanIdOf('goal:g-1:run-1', 'goal'), isRemote: true });
    expect(activityParent({})).toBeNull();
    expect(activityParent(undefined)).toBeNull();
    expect(activityParent({ [TRACE_HEADER]: defaultPayloadConverter.toPayload({ trace: 42 }) })).toBeNull();
    expect(activityParent({ [TRACE_HEADER]: { metadata: { encoding: new TextEncoder().encode('json/plain') }, data: new TextEncoder().encode('{not json') } })).toBeNull();
  });
});
