// OpenTelemetry for the worker, configured only by the standard OTEL_* variables and off
// when they are unset:
// - traces (OTEL_TRACES_EXPORTER=otlp|console, or an OTLP endpoint set): one trace per goal
//   and per session turn, with the GenAI semantic conventions — `invoke_agent` for the goal,
//   each task agent and each session turn, `chat <model>` per model call, `execute_tool
//   <name>` per tool call, `await_approval` while a human decides (their request is a link).
//   Workflows report their spans through a sink and pass their span to activities in a
//   header (workflows/trace.ts says why not Temporal's workflow interceptors): the workflow
//   code is the same with tracing on or off. Exported with OTLP/HTTP to
//   OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT.
// - metrics (OTEL_METRICS_EXPORTER=prometheus): Keel's counters on
//   http://OTEL_EXPORTER_PROMETHEUS_HOST:OTEL_EXPORTER_PROMETHEUS_PORT/metrics (default
//   0.0.0.0:9464), and the Temporal runtime's own metrics on the next port (9465).
// The OpenTelemetry SDK, its exporters and its resources load only when one of these is on:
// ~0.2 s of CPU that every worker start paid before, traced or not.
import { type Attributes, context, type Context, type Counter, type Histogram, ROOT_CONTEXT, type Span, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import type { Resource } from '@opentelemetry/resources';
import type { SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Context as ActivityContext } from '@temporalio/activity';
import { Runtime, type RuntimeOptions } from '@temporalio/worker';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, ActivityInterceptorsFactory, InjectedSinks, Next, WorkerOptions } from '@temporalio/worker';
import { noteReader } from '../activities/live-readers';
import type { KeelReaderSinks } from '../workflows/reader-sink';
import type { KeelSinks } from '../workflows/telemetry-sink';
import type { KeelTraceSinks } from '../workflows/trace-header';
import { activityParent, KeelIdGenerator, keelTraceSink, type WorkflowTracing } from './trace-export';

export class TelemetryConfigError extends Error {
  override readonly name = 'TelemetryConfigError';
}

export interface TelemetryConfig {
  serviceName: string;
  traces: 'otlp' | 'console' | null;
  /** The OTLP/HTTP traces URL from the variables given (the exporter alone would read process.env only). */
  tracesUrl: string | undefined;
  /** Where Keel's metrics are served, when OTEL_METRICS_EXPORTER includes prometheus. */
  prometheus: { host: string; port: number } | null;
}

const list = (value: string | undefined) =>
  (value ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);

/** Reads the standard variables; unknown exporter names are a start-up error, not a silent no-op. */
export function telemetryConfig(env: NodeJS.ProcessEnv = process.env): TelemetryConfig {
  const off = env.OTEL_SDK_DISABLED?.toLowerCase() === 'true';
  const serviceName = env.OTEL_SERVICE_NAME || 'keel-worker';
  const tracesList = list(env.OTEL_TRACES_EXPORTER);
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  for (const name of tracesList) if (!['otlp', 'console', 'none'].includes(name)) throw new TelemetryConfigError(`OTEL_TRACES_EXPORTER: "${name}" is not supported (otlp, console or none)`);
  const traces = off || tracesList.includes('none') ? null : tracesList.includes('otlp') || (tracesList.length === 0 && endpoint) ? 'otlp' : tracesList.includes('console') ? 'console' : null;
  const metricsList = list(env.OTEL_METRICS_EXPORTER);
  for (const name of metricsList) if (!['prometheus', 'none'].includes(name)) throw new TelemetryConfigError(`OTEL_METRICS_EXPORTER: "${name}" is not supported (prometheus or none)`);
  let prometheus: TelemetryConfig['prometheus'] = null;
  if (!off && metricsList.includes('prometheus')) {
    const port = Number(env.OTEL_EXPORTER_PROMETHEUS_PORT || 9464);
    if (!Number.isInteger(port) || port < 0 || port > 65534) throw new TelemetryConfigError(`OTEL_EXPORTER_PROMETHEUS_PORT: "${env.OTEL_EXPORTER_PROMETHEUS_PORT}" is not a port`);
    prometheus = { host: env.OTEL_EXPORTER_PROMETHEUS_HOST || '0.0.0.0', port };
  }
  const tracesUrl = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || (env.OTEL_EXPORTER_OTLP_ENDPOINT ? `${env.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces` : undefined);
  return { serviceName, traces, tracesUrl, prometheus };
}

/** The Temporal runtime's Prometheus address: the port after Keel's. */
export function temporalMetricsAddress(config: TelemetryConfig): string | null {
  return config.prometheus ? `${config.prometheus.host}:${config.prometheus.port + 1}` : null;
}

/**
 * The sinks workflows call (workflows/telemetry-sink.ts, workflows/trace.ts,
 * workflows/reader-sink.ts): every worker has all of them, the first two doing nothing
 * without metrics or tracing, so the workflow code is the same.
 */
export function keelWorkflowSinks(instruments: KeelInstruments | null, tracing: WorkflowTracing | null = null): InjectedSinks<KeelSinks & KeelTraceSinks & KeelReaderSinks> {
  return { ...keelEventSink(instruments), ...keelTraceSink(tracing), ...keelReaderSink() };
}

/** Reads of a workflow's stream, for this process's model calls (activities/live-readers.ts). */
function keelReaderSink(): InjectedSinks<KeelReaderSinks> {
  return {
    keelReaders: {
      read: {
        // Queries are not replayed; a replayed read would be an old one anyway.
        callDuringReplay: false,
        fn(info) {
          noteReader(info.workflowId);
        },
      },
    },
  };
}

function keelEventSink(instruments: KeelInstruments | null): InjectedSinks<KeelSinks> {
  // When this worker saw a call's approval requested: time to approval, in-process only
  // (a request seen by another worker is not timed here).
  const requested = new Map<string, number>();
  return {
    keelTelemetry: {
      events: {
        callDuringReplay: false,
        fn(info, events) {
          if (!instruments) return;
          for (const event of events) {
            const machine = event.kind.split('.')[0] ?? event.kind;
            instruments.transitions.add(1, { machine, kind: event.kind, workflow_type: info.workflowType });
            const key = `${info.workflowId}\0${event.callId ?? ''}`;
            const at = Date.parse(event.at);
            switch (event.kind) {
              case 'tool.approval_requested':
                instruments.approvals.add(1, { decision: 'requested' });
                requested.set(key, at);
                break;
              case 'tool.approved':
              case 'tool.denied': {
                instruments.approvals.add(1, { decision: event.kind === 'tool.approved' ? 'approved' : 'denied' });
                const since = requested.get(key);
                if (since !== undefined) instruments.approvalWait.record((at - since) / 1000, { decision: event.kind.slice(5) });
                requested.delete(key);
                break;
              }
              case 'tool.result':
                requested.delete(key);
                break;
              default:
                break;
            }
          }
        },
      },
    },
  };
}

interface KeelInstruments {
  modelCalls: Counter;
  modelSeconds: Histogram;
  tokens: Counter;
  cost: Counter;
  toolCalls: Counter;
  toolSeconds: Histogram;
  transitions: Counter;
  approvals: Counter;
  approvalWait: Histogram;
}

/**
 * Histogram buckets, in seconds. Durations: 10 ms to 10 min (a file read to a long build
 * or a long model answer). Approval waits: a second to a day (a human answers).
 */
export const DURATION_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600];
export const APPROVAL_WAIT_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 900, 1800, 3600, 7200, 14_400, 28_800, 86_400];

export interface Telemetry {
  config: TelemetryConfig;
  tracing: boolean;
  /**
   * What the worker adds: the sinks workflows report to (events for counters, finished
   * spans) and Keel's activity interceptor for model and tool spans and counters. Never
   * workflow interceptors: the workflow code does not depend on telemetry.
   */
  workerOptions: Pick<WorkerOptions, 'interceptors' | 'sinks'>;
  /** Where Keel's metrics are served, once started. */
  metricsUrl: string | null;
  shutdown(): Promise<void>;
}

/** Starts what the configuration asks for; nothing at all when OTEL_* is unset. */
export async function startTelemetry(env: NodeJS.ProcessEnv = process.env, exporter?: SpanExporter): Promise<Telemetry> {
  const config = telemetryConfig(env);
  // One resource (the service's name) for traces and metrics, made when either is on.
  let named: Promise<Resource> | null = null;
  const resource = () => (named ??= import('@opentelemetry/resources').then(({ Resource }) => new Resource({ 'service.name': config.serviceName })));
  const closers: (() => Promise<void>)[] = [];
  let tracer: Tracer | null = null;
  let tracing: WorkflowTracing | null = null;
  if (config.traces || exporter) {
    const [{ BatchSpanProcessor, ConsoleSpanExporter, RandomIdGenerator }, { NodeTracerProvider }, { W3CTraceContextPropagator }] = await Promise.all([
      import('@opentelemetry/sdk-trace-base'),
      import('@opentelemetry/sdk-trace-node'),
      import('@opentelemetry/core'),
    ]);
    const spanExporter =
      exporter ?? (config.traces === 'console' ? new ConsoleSpanExporter() : new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter(config.tracesUrl ? { url: config.tracesUrl } : {}));
    const spanProcessor: SpanProcessor = new BatchSpanProcessor(spanExporter, { scheduledDelayMillis: 500 });
    // The Node provider: an async-local context, so that spans started inside an activity
    // are children of the span the activity runs under. Ids: random, except for the spans
    // workflows report, whose ids come from their keys (worker/trace-export.ts).
    const ids = new KeelIdGenerator(new RandomIdGenerator());
    const provider = new NodeTracerProvider({ resource: await resource(), spanProcessors: [spanProcessor], idGenerator: ids });
    provider.register();
    tracer = provider.getTracer('keel');
    tracing = { tracer, ids, propagator: new W3CTraceContextPropagator() };
    closers.push(() => provider.shutdown());
  }
  let instruments: KeelInstruments | null = null;
  let metricsUrl: string | null = null;
  if (config.prometheus) {
    const { host, port } = config.prometheus;
    const [{ PrometheusExporter }, { MeterProvider }] = await Promise.all([import('@opentelemetry/exporter-prometheus'), import('@opentelemetry/sdk-metrics')]);
    const prometheus = new PrometheusExporter({ host, port, preventServerStart: true });
    await prometheus.startServer();
    metricsUrl = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}/metrics`;
    const meters = new MeterProvider({ resource: await resource(), readers: [prometheus] });
    const meter = meters.getMeter('keel');
    instruments = {
      modelCalls: meter.createCounter('keel_model_calls', { description: 'model calls by model and stop reason' }),
      modelSeconds: meter.createHistogram('keel_model_duration_seconds', { description: 'how long model calls ran (one attempt)', unit: 's', advice: { explicitBucketBoundaries: DURATION_BUCKETS } }),
      tokens: meter.createCounter('keel_tokens', { description: 'billed tokens by model and type (input, output, cache_read, cache_write)' }),
      cost: meter.createCounter('keel_cost_usd', { description: 'cost of model calls in USD, by model (priced models only)' }),
      toolCalls: meter.createCounter('keel_tool_calls', { description: 'tool calls by tool and status (ok, error, failed, cancelled)' }),
      toolSeconds: meter.createHistogram('keel_tool_duration_seconds', { description: 'how long tool calls ran', unit: 's', advice: { explicitBucketBoundaries: DURATION_BUCKETS } }),
      transitions: meter.createCounter('keel_transitions', { description: 'event-log entries (one per machine transition) by machine and kind' }),
      approvals: meter.createCounter('keel_approvals', { description: 'tool approvals by decision: requested, approved, denied' }),
      approvalWait: meter.createHistogram('keel_approval_wait_seconds', { description: 'time from an approval request to its answer', unit: 's', advice: { explicitBucketBoundaries: APPROVAL_WAIT_BUCKETS } }),
    };
    closers.push(async () => {
      await meters.shutdown();
      await prometheus.stopServer();
    });
  }
  const activity: ActivityInterceptorsFactory[] = [];
  if (tracer || instruments) activity.push((ctx) => ({ inbound: new KeelActivityInterceptor(ctx, tracer, instruments) }));
  return {
    config,
    tracing: tracer !== null,
    workerOptions: {
      interceptors: { activity },
      sinks: keelWorkflowSinks(instruments, tracing),
    },
    metricsUrl,
    async shutdown() {
      await Promise.allSettled(closers.map((close) => close()));
    },
  };
}

/**
 * What a worker process starts (`npm run worker`, `npm start`, `npm run dev`): telemetry from
 * OTEL_*, the Temporal runtime's own metrics (before the first connection), and the lines
 * that say where it all goes.
 */
export async function startWorkerTelemetry(env: NodeJS.ProcessEnv = process.env, runtime: RuntimeOptions = {}): Promise<Telemetry & { lines: string[] }> {
  const telemetry = await startTelemetry(env);
  const temporalMetrics = temporalMetricsAddress(telemetry.config);
  // The runtime's task latencies, slots and polls: installed before any connection exists.
  // Durations in seconds with `_seconds`, as Keel's series and the dashboard's queries have
  // them (the runtime's default is milliseconds without a unit). The runtime is installed
  // once per process: a caller's own options (`npm run dev` handles signals itself) come
  // here and are installed with the metrics, not by a second Runtime.install, which throws
  // "Runtime singleton has already been installed".
  const telemetryOptions = temporalMetrics
    ? { metrics: { prometheus: { bindAddress: temporalMetrics, countersTotalSuffix: true, unitSuffix: true, useSecondsForDurations: true } } }
    : undefined;
  if (telemetryOptions || Object.keys(runtime).length > 0) Runtime.install({ ...runtime, ...(telemetryOptions ? { telemetryOptions } : {}) });
  const lines = [
    ...(telemetry.tracing ? [`tracing to ${telemetry.config.traces === 'console' ? 'the console' : 'OTLP (OTEL_EXPORTER_OTLP_*)'} as ${telemetry.config.serviceName}`] : []),
    ...(telemetry.metricsUrl ? [`metrics on ${telemetry.metricsUrl} (Keel) and http://${temporalMetrics}/metrics (Temporal runtime)`] : []),
  ];
  return { ...telemetry, lines };
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj | null => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : null);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/**
 * Keel's view of an activity: a model call becomes a GenAI `chat` span and token and cost
 * counters; a tool call an `execute_tool` span and a counter by status. Attributes come
 * from the activity's input and result only — never the conversation's text.
 */
class KeelActivityInterceptor implements ActivityInboundCallsInterceptor {
  constructor(
    private readonly ctx: ActivityContext,
    private readonly tracer: Tracer | null,
    private readonly metrics: KeelInstruments | null,
  ) {}

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    const type = this.ctx.info.activityType;
    const arg = obj(input.args[0]);
    // The span the workflow was in when it scheduled this (a goal, an agent, a session turn).
    this.parent = activityParent(input.headers) ?? context.active();
    if (type === 'callModel') return this.modelCall(arg, () => next(input));
    if (type === 'runTool' || type.startsWith('mcp')) return this.toolCall(str(arg?.tool) ?? str(arg?.name) ?? type, str(arg?.callId) ?? str(arg?.toolUseId), () => next(input));
    return next(input);
  }

  private parent: Context = ROOT_CONTEXT;

  private async modelCall(arg: Obj | null, run: () => Promise<unknown>): Promise<unknown> {
    const started = performance.now();
    const model = str(arg?.model) ?? 'unknown';
    const attributes: Attributes = {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'anthropic',
      'gen_ai.system': 'anthropic',
      'gen_ai.request.model': model,
      ...(num(arg?.maxTokens) !== undefined ? { 'gen_ai.request.max_tokens': num(arg?.maxTokens) } : {}),
      'keel.attempt': this.ctx.info.attempt,
    };
    return this.span(`chat ${model}`, attributes, run, (span, result) => {
      const r = obj(result);
      const usage = obj(r?.usage);
      const stop = str(r?.stopReason) ?? 'unknown';
      const cost = num(obj(r?.cost)?.total);
      const responseModel = str(r?.model) ?? model;
      const tokens = {
        input: num(usage?.input_tokens) ?? 0,
        output: num(usage?.output_tokens) ?? 0,
        cache_read: num(usage?.cache_read_input_tokens) ?? 0,
        cache_write: num(usage?.cache_creation_input_tokens) ?? 0,
      };
      span?.setAttributes({
        'gen_ai.response.model': responseModel,
        'gen_ai.response.finish_reasons': [stop],
        // All input tokens, as the GenAI conventions define it: cached ones included (a sum of
        // the uncached part alone under-counts a cached session many times); the split is beside it.
        'gen_ai.usage.input_tokens': tokens.input + tokens.cache_read + tokens.cache_write,
        'gen_ai.usage.output_tokens': tokens.output,
        'gen_ai.usage.cache_read.input_tokens': tokens.cache_read,
        'gen_ai.usage.cache_creation.input_tokens': tokens.cache_write,
        ...(str(obj(r?.message)?.id) ? { 'gen_ai.response.id': str(obj(r?.message)?.id) } : {}),
        ...(cost !== undefined ? { 'keel.cost_usd': cost } : {}),
      });
      this.metrics?.modelCalls.add(1, { model: responseModel, stop_reason: stop });
      this.metrics?.modelSeconds.record((performance.now() - started) / 1000, { model: responseModel });
      for (const [kind, n] of Object.entries(tokens)) if (n > 0) this.metrics?.tokens.add(n, { model: responseModel, type: kind });
      if (cost !== undefined) this.metrics?.cost.add(cost, { model: responseModel });
    });
  }

  private async toolCall(tool: string, callId: string | undefined, run: () => Promise<unknown>): Promise<unknown> {
    const started = performance.now();
    let status = 'failed';
    const attributes: Attributes = { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': tool, 'gen_ai.tool.type': 'function', ...(callId ? { 'gen_ai.tool.call.id': callId } : {}) };
    try {
      return await this.span(`execute_tool ${tool}`, attributes, run, (span, result) => {
        // A command stopped at a sandbox limit is its own status, as in the tool-call machine.
        const r = obj(result);
        status = r?.is_error !== true ? 'ok' : obj(r.facts)?.limit !== undefined ? 'limit' : 'error';
        span?.setAttribute('keel.tool.status', status);
      });
    } catch (error) {
      status = this.ctx.cancellationSignal.aborted ? 'cancelled' : 'failed';
      throw error;
    } finally {
      this.metrics?.toolCalls.add(1, { tool, status });
      this.metrics?.toolSeconds.record((performance.now() - started) / 1000, { tool });
    }
  }

  private async span(name: string, attributes: Attributes, run: () => Promise<unknown>, onResult: (span: Span | null, result: unknown) => void): Promise<unknown> {
    if (!this.tracer) {
      const result = await run();
      onResult(null, result);
      return result;
    }
    return this.tracer.startActiveSpan(name, { attributes }, this.parent, async (span) => {
      try {
        const result = await run();
        onResult(span, result);
        return result;
      } catch (error) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.name : 'error' });
        span.setAttribute('error.type', error instanceof Error ? error.name : 'error');
        throw error;
      } finally {
        span.end();
      }
    });
  }
}
