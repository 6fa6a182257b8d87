// Telemetry end to end: the compiled worker in its own process, configured only by OTEL_*
// variables, exporting OTLP/HTTP to a receiver in this test (the same wire format the
// OpenTelemetry Collector and Jaeger accept), and serving Prometheus metrics that the test
// scrapes. One session turn with a tool call gives one trace: client → workflow → model
// call (GenAI attributes) → tool call.
import fs from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { context, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { Client } from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandin } from '../../standin/server';
import { approveSignal, pendingApprovalsQuery, transcriptQuery, userMessageSignal } from '../../workflows/definitions';
import { sessionWorkflow } from '../../workflows/session';
import { buildCompiledWorker, type CompiledBuild } from '../fixtures/compiled-worker';
import { makeWorkspace, say, use } from '../fixtures/session-harness';
import { connectTestEnv, type TemporalTestEnv, uniqueTaskQueue } from '../helpers/temporal';


interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  arrayValue?: { values: OtlpValue[] };
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: { key: string; value: OtlpValue }[];
}
const value = (v: OtlpValue): unknown => v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ?? v.arrayValue?.values.map(value);
const attrs = (s: OtlpSpan) => Object.fromEntries(s.attributes.map((a) => [a.key, value(a.value)]));

let env: TemporalTestEnv;
let build: CompiledBuild;
let receiver: Server;
const spans: OtlpSpan[] = [];

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

beforeAll(async () => {
  env = await connectTestEnv();
  build = await buildCompiledWorker();
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString()) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] };
        for (const rs of body.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
}, 180_000);

afterAll(async () => {
  await build?.remove();
  receiver?.close();
  await env?.close();
});

describe('telemetry', () => {
  it('traces a turn from the client to the model and tool spans, and counts it in /metrics', async () => {
    const standin = await startStandin({
      scenario: {
        rules: [
          { match: { lastUserContains: 'write notes', hasToolResults: false }, reply: use('write_file', { path: 'notes.txt', content: 'hi' }, 'toolu_w1') },
          { match: { hasToolResults: true }, reply: say('The notes say hi.') },
        ],
      },
    });
    const workspace = await makeWorkspace();
    const taskQueue = uniqueTaskQueue('otel');
    const metricsPort = await freePort();
    const { child: worker, output } = await build.start({
      TEMPORAL_ADDRESS: env.address,
      KEEL_TASK_QUEUE: taskQueue,
      ANTHROPIC_API_KEY: 'sk-ant-test-otel-1',
      ANTHROPIC_BASE_URL: standin.url,
      OTEL_SERVICE_NAME: 'keel-test-worker',
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`,
      OTEL_METRICS_EXPORTER: 'prometheus',
      OTEL_EXPORTER_PROMETHEUS_HOST: '127.0.0.1',
      OTEL_EXPORTER_PROMETHEUS_PORT: String(metricsPort),
    });
    const log = output.join('');
    expect(log).toContain(`metrics on http://127.0.0.1:${metricsPort}/metrics`);

    // The caller's side: an application with its own tracer, starting the session in a span.
    const local = new InMemorySpanExporter();
    const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(local)] });
    provider.register();
    const tracer = provider.getTracer('test-app');
    const client = new Client({ connection: env.client.connection, namespace: env.namespace, interceptors: { workflow: [new OpenTelemetryWorkflowClientInterceptor({ tracer })] } });
    try {
      const root = tracer.startSpan('user request');
      const traceId = root.spanContext().traceId;
      const handle = await context.with(trace.setSpan(context.active(), root), async () => {
        const h = await client.workflow.start(sessionWorkflow, { taskQueue, workflowId: `${taskQueue}-s`, args: [{ workspace, policy: { mode: 'ask' } }] });
        await h.signal(userMessageSignal, { text: 'write notes' });
        return h;
      });
      // A human takes a moment to approve (the wait is measured), in the same request's trace.
      await expect.poll(async () => (await handle.query(pendingApprovalsQuery)).length, { timeout: 30_000 }).toBe(1);
      await new Promise((r) => setTimeout(r, 300));
      await context.with(trace.setSpan(context.active(), root), () => handle.signal(approveSignal, { callId: 'toolu_w1' }));
      root.end();
      await expect.poll(async () => (await handle.query(transcriptQuery)).messages.at(-1), { timeout: 30_000 }).toMatchObject({ role: 'assistant', content: [{ text: 'The notes say hi.' }] });

      const chat = async () => spans.filter((s) => s.traceId === traceId && s.name.startsWith('chat '));
      await expect.poll(async () => (await chat()).length, { timeout: 20_000 }).toBeGreaterThanOrEqual(2);
      const ours = spans.filter((s) => s.traceId === traceId);
      const names = ours.map((s) => s.name);
      // The client's own span (exported by the application) and the worker's share the trace.
      expect(local.getFinishedSpans().find((s) => s.name === 'StartWorkflow:sessionWorkflow')?.spanContext().traceId).toBe(traceId);
      expect(names).toContain('HandleSignal:userMessage');
      expect(names).toContain('StartActivity:callModel');
      expect(names).toContain('RunActivity:callModel');
      const [first] = await chat();
      const a = attrs(first!);
      expect(a).toMatchObject({ 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'anthropic', 'gen_ai.response.finish_reasons': ['tool_use'] });
      expect(a['gen_ai.request.model']).toEqual(expect.any(String));
      expect(a['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
      // All input, cached included (the first call writes its whole prompt to the cache), with the split beside it.
      expect(a['gen_ai.usage.cache_creation.input_tokens']).toBeGreaterThan(0);
      expect(a['gen_ai.usage.input_tokens']).toBeGreaterThan((a['gen_ai.usage.cache_creation.input_tokens'] as number) + (a['gen_ai.usage.cache_read.input_tokens'] as number));
      expect(a['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
      // The model span is a child of the activity span, which is in the client's trace.
      const parent = ours.find((s) => s.spanId === first!.parentSpanId);
      expect(parent?.name).toBe('RunActivity:callModel');
      await expect.poll(() => spans.some((s) => s.traceId === traceId && s.name === 'execute_tool write_file'), { timeout: 20_000 }).toBe(true);
      const tool = spans.find((s) => s.traceId === traceId && s.name === 'execute_tool write_file')!;
      expect(attrs(tool)).toMatchObject({ 'gen_ai.tool.name': 'write_file', 'keel.tool.status': 'ok' });
      // The conversation's text is in no span.
      expect(JSON.stringify(ours)).not.toContain('The notes say hi');

      const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      expect(metrics).toMatch(/keel_model_calls_total\{[^}]*stop_reason="tool_use"[^}]*\} 1/);
      expect(metrics).toMatch(/keel_model_calls_total\{[^}]*stop_reason="end_turn"[^}]*\} 1/);
      expect(metrics).toMatch(/keel_tool_calls_total\{[^}]*tool="write_file"[^}]*status="ok"[^}]*\} 1/);
      // Transitions per machine, from the workflow's event log, and the approval with its wait.
      expect(metrics).toMatch(/keel_transitions_total\{[^}]*machine="turn",kind="turn.started"[^}]*\} 1/);
      expect(metrics).toMatch(/keel_transitions_total\{[^}]*machine="tool",kind="tool.result"[^}]*\} 1/);
      expect(metrics).toMatch(/keel_approvals_total\{[^}]*decision="requested"[^}]*\} 1/);
      expect(metrics).toMatch(/keel_approvals_total\{[^}]*decision="approved"[^}]*\} 1/);
      const waited = Number(/keel_approval_wait_seconds_sum\{[^}]*\} ([0-9.e+-]+)/.exec(metrics)?.[1]);
      expect(waited).toBeGreaterThan(0.2);
      expect(metrics).toMatch(/keel_tokens_total\{[^}]*type="input"[^}]*\} [1-9]/);
      const runtime = await (await fetch(`http://127.0.0.1:${metricsPort + 1}/metrics`)).text();
      expect(runtime).toMatch(/temporal_/);
      await handle.terminate('test over');
    } finally {
      worker.kill('SIGKILL');
      await standin.close();
      await fs.rm(workspace, { recursive: true, force: true });
    }
  });
});
