// KeelClient's tracing interceptor (client/caller-trace.ts): a call inside the caller's span is
// traced and carries the trace to the workflow in its headers; a call outside any span — every
// poll of `keel serve` — records no span, so it is not a trace of its own.
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { WorkflowQueryInput, WorkflowSignalInput } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallerTraceInterceptor } from '../../client/caller-trace';

const exporter = new InMemorySpanExporter();

beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
});
afterAll(() => {
  trace.disable();
  context.disable();
});

const query = (): WorkflowQueryInput => ({ queryType: 'state', args: [], headers: {}, workflowExecution: { workflowId: 'session-1' }, queryRejectCondition: undefined });
const signal = (): WorkflowSignalInput => ({ signalName: 'approve', args: [], headers: {}, workflowExecution: { workflowId: 'session-1' } });

describe('CallerTraceInterceptor', () => {
  it('records nothing for calls outside any span (a poll), and passes them on unchanged', async () => {
    exporter.reset();
    const interceptor = new CallerTraceInterceptor();
    const seen: Record<string, unknown>[] = [];
    for (let i = 0; i < 5; i++) {
      expect(await interceptor.query(query(), async (input) => (seen.push(input.headers), 'answer'))).toBe('answer');
    }
    await interceptor.signal(signal(), async (input) => void seen.push(input.headers));
    expect(exporter.getFinishedSpans()).toEqual([]);
    expect(seen).toEqual(Array.from({ length: 6 }, () => ({})));
  });

  it("traces a call inside the caller's span and carries that trace to the workflow", async () => {
    exporter.reset();
    const interceptor = new CallerTraceInterceptor();
    const tracer = trace.getTracer('app');
    let headers: Record<string, unknown> = {};
    const traceId = await tracer.startActiveSpan('POST /approve', async (span) => {
      await interceptor.signal(signal(), async (input) => void (headers = input.headers));
      span.end();
      return span.spanContext().traceId;
    });
    const spans = exporter.getFinishedSpans();
    expect(spans.map((s) => s.name).sort()).toEqual(['POST /approve', 'SignalWorkflow:approve']);
    expect(new Set(spans.map((s) => s.spanContext().traceId))).toEqual(new Set([traceId]));
    expect(Object.keys(headers)).toContain('_tracer-data');
  });
});
