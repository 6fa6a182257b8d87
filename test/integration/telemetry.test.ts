// Telemetry end to end: the compiled worker in its own process, configured only by OTEL_*
// variables, exporting OTLP/HTTP to a receiver in this test (the same wire format the
// OpenTelemetry Collector and Jaeger accept), and serving Prometheus metrics that the test
// scrapes. A session turn is one trace; a goal is one trace — its planner, task agents,
// their model and tool calls, approval waits and critic under the goal's root span — with
// the requests of the people who started it and approved its calls as links.
import fs from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { context, trace, type Tracer } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { Client } from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandin } from '../../standin/server';
import { startOnFreePort } from '../../worker/dev-server';
import { approveSignal, goalApproveUpdate, goalStateQuery, pendingApprovalsQuery, transcriptQuery, userMessageSignal } from '../../workflows/definitions';
import { goalWorkflow } from '../../workflows/goal';
import { sessionWorkflow } from '../../workflows/session';
import { buildCompiledWorker, type CompiledBuild, type CompiledWorker } from '../fixtures/compiled-worker';
import { agent, critic, finish, plan, planner, review, task } from '../fixtures/goal-harness';
import { makeWorkspace, say, use, waitUntil } from '../fixtures/session-harness';
import { treeSvg, treeText, type TreeSpan } from '../fixtures/span-tree';
import { uniqueTaskQueue } from '../helpers/temporal';
import { useTemporal } from '../fixtures/use-temporal';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values: OtlpValue[] };
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: { key: string; value: OtlpValue }[];
  links?: { traceId: string; spanId: string }[];
  status?: { code?: number };
}
const value = (v: OtlpValue): unknown =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ?? v.boolValue ?? v.arrayValue?.values.map(value);
const attrs = (s: OtlpSpan) => Object.fromEntries(s.attributes.map((a) => [a.key, value(a.value)]));
const asTree = (s: OtlpSpan): TreeSpan => ({
  spanId: s.spanId,
  parentSpanId: s.parentSpanId || undefined,
  name: s.name,
  start: Number(s.startTimeUnixNano),
  end: Number(s.endTimeUnixNano),
  error: s.status?.code === 2,
  links: s.links?.length ?? 0,
});

const { env } = useTemporal({ workflows: false });
let build: CompiledBuild;
let receiver: Server;
let worker: CompiledWorker;
let metricsPort: number;
let taskQueue: string;
let tracer: Tracer;
let local: InMemorySpanExporter;
let client: Client;
let standin: Awaited<ReturnType<typeof startStandin>>;
const spans: OtlpSpan[] = [];
/** The session test's turn (its spans are not the goal's). */
let sessionTrace = '';

beforeAll(async () => {
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
  standin = await startStandin({
    scenario: {
      rules: [
        // The session.
        { match: { lastUserContains: 'write notes', hasToolResults: false }, reply: use('write_file', { path: 'notes.txt', content: 'hi' }, 'toolu_w1') },
        // The goal: the planner's first call is overloaded (529) and retried; each task writes a file after approval.
        { match: planner(), times: 1, fault: { kind: 'status', status: 529 } },
        { match: planner(), reply: plan([task('one', 'Write one', 'Write ONE.md.'), task('two', 'Write two', 'Write TWO.md.', { dependencies: ['one'] })]) },
        { match: agent('one', { hasToolResults: false }), reply: use('write_file', { path: 'ONE.md', content: 'one\n' }) },
        { match: agent('two', { hasToolResults: false }), reply: use('write_file', { path: 'TWO.md', content: 'two\n' }) },
        { match: { systemContains: 'task [', hasToolResults: true }, reply: finish('Written.') },
        { match: critic(), reply: review('pass', 'Both files are there.') },
        { match: { hasToolResults: true }, reply: say('The notes say hi.') },
      ],
    },
  });
  taskQueue = uniqueTaskQueue('otel');
  // The worker binds the metrics port found free here; another test file's process can take
  // it in between (CI saw "Address already in use"): then the worker starts on another.
  worker = await startOnFreePort(
    (port) => {
      metricsPort = port;
      return build.start({
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
    },
    (error) => /Address already in use/i.test(String(error)),
  );
  // The caller's side: an application with its own tracer (as KeelClient sets up the interceptor).
  local = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(local)] });
  provider.register();
  tracer = provider.getTracer('test-app');
  client = new Client({ connection: env.client.connection, namespace: env.namespace, interceptors: { workflow: [new OpenTelemetryWorkflowClientInterceptor({ tracer })] } });
}, 240_000);

afterAll(async () => {
  worker?.child.kill('SIGKILL');
  await standin?.close();
  receiver?.close();
});

/** Runs `body` inside a new span of the application (a request), returning the span's trace id. */
async function request<T>(name: string, body: () => Promise<T>): Promise<{ traceId: string; result: T }> {
  const span = tracer.startSpan(name);
  try {
    const result = await context.with(trace.setSpan(context.active(), span), body);
    return { traceId: span.spanContext().traceId, result };
  } finally {
    span.end();
  }
}

describe('telemetry', () => {
  it('one prebuilt bundle of the code, whatever the telemetry: no separate traced bundle, nothing ignored', async () => {
    const log = worker.output.join('');
    expect(log).toContain(`metrics on http://127.0.0.1:${metricsPort}/metrics`);
    expect(log).toContain('tracing to OTLP');
    expect(log).not.toMatch(/Ignoring/);
    const files = await fs.readdir(build.dir);
    // The second file is the same code with the encoding failure converter, for workers with encryption keys.
    expect(files.filter((f) => f.startsWith('workflow-bundle') && f.endsWith('.js')).sort()).toEqual(['workflow-bundle.encoded-failures.js', 'workflow-bundle.js']);
  });

  it('a session turn is one trace: the turn, its model calls, the approval wait and the tool call; the requests are links', async () => {
    const workspace = await makeWorkspace();
    try {
      const started = await request('user request', async () => {
        const h = await client.workflow.start(sessionWorkflow, { taskQueue, workflowId: `${taskQueue}-s`, args: [{ workspace, policy: { mode: 'ask' } }] });
        await h.signal(userMessageSignal, { text: 'write notes' });
        return h;
      });
      const handle = started.result;
      // A human takes a moment to approve (the wait is measured), from a request of their own.
      await expect.poll(async () => (await handle.query(pendingApprovalsQuery)).length, { timeout: 30_000 }).toBe(1);
      await new Promise((r) => setTimeout(r, 300));
      const approver = await request('approver request', () => handle.signal(approveSignal, { callId: 'toolu_w1' }));
      await expect.poll(async () => (await handle.query(transcriptQuery)).messages.at(-1), { timeout: 30_000 }).toMatchObject({ role: 'assistant', content: [{ text: 'The notes say hi.' }] });

      // The turn's root span arrives when the turn ends.
      await expect.poll(() => spans.some((s) => s.name === 'invoke_agent keel-session'), { timeout: 20_000 }).toBe(true);
      const turn = spans.find((s) => s.name === 'invoke_agent keel-session')!;
      expect(turn.parentSpanId ?? '').toBe('');
      expect(attrs(turn)).toMatchObject({ 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.conversation.id': `${taskQueue}-s`, 'keel.turn.outcome': 'completed' });
      expect(attrs(turn)['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
      // The client's request is a link (the client's own span and the workflow start share that trace).
      expect(local.getFinishedSpans().find((s) => s.name === 'StartWorkflow:sessionWorkflow')?.spanContext().traceId).toBe(started.traceId);
      expect(turn.links?.map((l) => l.traceId)).toContain(started.traceId);

      sessionTrace = turn.traceId;
      // Under each model call, the Anthropic SDK's own span of the HTTP request.
      await expect.poll(() => spans.filter((s) => s.traceId === turn.traceId).length, { timeout: 20_000 }).toBe(7);
      const ours = spans.filter((s) => s.traceId === turn.traceId);
      expect(treeText(ours.map(asTree), turn.spanId).map((line) => line.replace(/chat \S+/, 'chat <model>'))).toEqual([
        'invoke_agent keel-session',
        '  chat <model>',
        '    anthropic.messages.create',
        '  await_approval write_file',
        '  execute_tool write_file',
        '  chat <model>',
        '    anthropic.messages.create',
      ]);
      const chat = ours.filter((s) => s.name.startsWith('chat '));
      const a = attrs(chat[0]!);
      expect(a).toMatchObject({ 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'anthropic', 'gen_ai.response.finish_reasons': ['tool_use'] });
      expect(a['gen_ai.request.model']).toEqual(expect.any(String));
      expect(a['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
      // All input, cached included (the first call writes its whole prompt to the cache), with the split beside it.
      expect(a['gen_ai.usage.cache_creation.input_tokens']).toBeGreaterThan(0);
      expect(a['gen_ai.usage.input_tokens']).toBeGreaterThan((a['gen_ai.usage.cache_creation.input_tokens'] as number) + (a['gen_ai.usage.cache_read.input_tokens'] as number));
      expect(a['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
      const wait = ours.find((s) => s.name === 'await_approval write_file')!;
      expect(attrs(wait)).toMatchObject({ 'keel.approval.decision': 'approved', 'gen_ai.tool.call.id': 'toolu_w1' });
      expect(Number(wait.endTimeUnixNano) - Number(wait.startTimeUnixNano)).toBeGreaterThan(200e6);
      expect(wait.links?.map((l) => l.traceId)).toEqual([approver.traceId]);
      const tool = ours.find((s) => s.name === 'execute_tool write_file')!;
      expect(attrs(tool)).toMatchObject({ 'gen_ai.tool.name': 'write_file', 'gen_ai.tool.call.id': 'toolu_w1', 'keel.tool.status': 'ok' });
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
      // A tool that takes milliseconds lands in a millisecond bucket, not in le="5".
      expect(metrics).toMatch(/keel_tool_duration_seconds_bucket\{[^}]*le="0\.01"[^}]*\}/);
      expect(metrics).toMatch(/keel_tool_duration_seconds_bucket\{[^}]*le="600"[^}]*\}/);
      const under250ms = Number(/keel_tool_duration_seconds_bucket\{[^}]*tool="write_file"[^}]*le="0\.25"[^}]*\} (\d+)/.exec(metrics)?.[1]);
      expect(under250ms).toBe(1);
      const runtime = await (await fetch(`http://127.0.0.1:${metricsPort + 1}/metrics`)).text();
      expect(runtime).toMatch(/temporal_/);
      await handle.terminate('test over');
    } finally {
      await fs.rm(workspace, { recursive: true, force: true });
    }
  });

  it('a goal is one trace: planner, task agents with their model calls, approval waits and tools, critic — under the goal', async () => {
    const workspace = await makeWorkspace('keel-otel-goal-');
    const goalId = `${taskQueue}-goal`;
    try {
      const started = await request('user request', () =>
        client.workflow.start(goalWorkflow, {
          taskQueue,
          workflowId: goalId,
          args: [{ goal: 'Two files', workspace, policy: { mode: 'ask' }, autoApprove: true, modelActivity: { retry: { initialInterval: '100 ms', maximumAttempts: 3 } } }],
        }),
      );
      const goal = started.result;
      const approvers: string[] = [];
      for (const file of ['one', 'two']) {
        const waiting = await waitUntil(() => goal.query(goalStateQuery), (s) => s.pendingApprovals.length === 1 && s.pendingApprovals[0]!.taskId === file, 30_000, `approval of ${file}`);
        const approved = await request(`approve ${file}`, () => goal.executeUpdate(goalApproveUpdate, { args: [{ callId: waiting.pendingApprovals[0]!.callId }] }));
        approvers.push(approved.traceId);
      }
      expect((await goal.result()).verdict).toBe('goal_met');

      await expect.poll(() => spans.some((s) => s.name === 'invoke_agent keel-goal'), { timeout: 20_000 }).toBe(true);
      const rootSpan = spans.find((s) => s.name === 'invoke_agent keel-goal')!;
      // Planner (2 attempts) + 2 agents × 2 calls + critic = 7 model calls, 2 tools, 2 waits, 2 agents, the root.
      // Planner (a 529, then its retry) + 2 agents × 2 calls + critic = 7 model calls, each with
      // the Anthropic SDK's HTTP span under it; 2 tools, 2 approval waits, 2 agents, the root.
      await expect.poll(() => spans.filter((s) => s.traceId === rootSpan.traceId).length, { timeout: 20_000 }).toBe(21);
      const ours = spans.filter((s) => s.traceId === rootSpan.traceId);
      // Every model and tool span of the goal is in its trace (none hang elsewhere).
      const goalWork = spans.filter((s) => (s.name.startsWith('chat ') || s.name.startsWith('execute_tool ')) && s.traceId !== sessionTrace);
      expect(goalWork).toHaveLength(9);
      expect(new Set(goalWork.map((s) => s.traceId))).toEqual(new Set([rootSpan.traceId]));
      expect(ours.filter((s) => s.name.startsWith('chat '))).toHaveLength(7);
      expect(ours.filter((s) => s.name.startsWith('execute_tool '))).toHaveLength(2);

      const tree = treeText(ours.map(asTree), rootSpan.spanId).map((line) => line.replace(/chat \S+/, 'chat <model>'));
      const model = (depth: number, error = false): string[] => [`${'  '.repeat(depth)}chat <model>${error ? ' (error)' : ''}`, `${'  '.repeat(depth + 1)}anthropic.messages.create${error ? ' (error)' : ''}`];
      const taskAgent = ['  invoke_agent worker', ...model(2), '    await_approval write_file', '    execute_tool write_file', ...model(2)];
      expect(tree).toEqual(['invoke_agent keel-goal', ...model(1, true), ...model(1), ...taskAgent, ...taskAgent, ...model(1)]);
      expect(rootSpan.parentSpanId ?? '').toBe('');
      expect(attrs(rootSpan)).toMatchObject({ 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'keel-goal', 'gen_ai.conversation.id': goalId, 'keel.goal.verdict': 'goal_met' });
      expect(attrs(rootSpan)['keel.cost_usd']).toBeGreaterThan(0);
      // Who started the goal and who approved: links to their own traces, not parents.
      expect(rootSpan.links?.map((l) => l.traceId)).toEqual([started.traceId]);
      const waits = ours.filter((s) => s.name.startsWith('await_approval')).sort((a, b) => Number(a.startTimeUnixNano) - Number(b.startTimeUnixNano));
      expect(waits.map((w) => w.links?.map((l) => l.traceId))).toEqual(approvers.map((t) => [t]));
      const agents = ours.filter((s) => s.name === 'invoke_agent worker');
      expect(agents.map((s) => attrs(s)['keel.task.id']).sort()).toEqual(['one', 'two']);
      const chat = ours.find((s) => s.name.startsWith('chat ') && s.parentSpanId === agents[0]!.spanId)!;
      expect(Object.keys(attrs(chat))).toEqual(expect.arrayContaining(['gen_ai.usage.cache_read.input_tokens', 'gen_ai.usage.cache_creation.input_tokens', 'keel.cost_usd']));

      if (process.env.KEEL_WRITE_TRACE_SVG) {
        await fs.writeFile(path.join(root, 'docs/images/goal-trace.svg'), treeSvg(ours.map(asTree), rootSpan.spanId, 'One goal, one trace (a real run against the model stand-in: two tasks, two approvals, a retried 529)'));
      }

      // The dashboard reads series that exist: every metric its queries name is in /metrics now.
      const scraped = (await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()) + (await (await fetch(`http://127.0.0.1:${metricsPort + 1}/metrics`)).text());
      const dashboard = JSON.parse(await fs.readFile(path.join(root, 'deploy/grafana/dashboards/keel.json'), 'utf8')) as { panels: { title: string; targets?: { expr: string }[] }[] };
      const missing: string[] = [];
      for (const panel of dashboard.panels) {
        for (const { expr } of panel.targets ?? []) {
          const names = new Set(expr.match(/\b(?:keel|temporal)_[a-z0-9_]+/g) ?? []);
          expect(names.size, panel.title).toBeGreaterThan(0);
          for (const name of names) if (!new RegExp(`^${name}[{ ]`, 'm').test(scraped)) missing.push(`${panel.title}: ${name}`);
        }
      }
      expect(missing).toEqual([]);
    } finally {
      await fs.rm(workspace, { recursive: true, force: true });
    }
  });
});
