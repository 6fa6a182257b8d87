// Tracing from inside workflows without changing what they do.
//
// Why not Temporal's OpenTelemetry workflow interceptors: they await inside every handler
// (an extra yield point) and draw span ids from Math.random, so a worker with them emits
// its commands in another order than one without — a goal recorded with tracing on failed
// with "Nondeterminism error: UpsertWorkflowSearchAttributes" on a worker without it, and
// the reverse (temporalio/sdk-typescript#1677, #2023). A fleet turns tracing on one
// worker at a time, so the workflow code must not depend on it. Here:
//
// - Spans a workflow owns (a goal, a task agent, a session turn, an approval wait) are
//   kept open in workflow memory, rebuilt the same way on replay from the workflow's own
//   clock, and reported once, when they end, through a sink (`keelTrace`, the activation's
//   spans in one call). A sink call is
//   not a command and is not made during replay; without tracing the worker's sink does
//   nothing. The call is made on every worker alike.
// - Spans are named by keys (`goal:<workflowId>:<firstRunId>` / `goal`), not ids: the worker
//   hashes keys into trace and span ids (worker/trace-export.ts), so any worker that
//   replays the workflow, and every activity it starts, names the same span the same way.
// - Activities and child workflows learn their parent from a header (`keel-trace`) that
//   Keel's own interceptors add (workflows/trace-interceptors.ts): synchronous, no yield
//   point, no randomness, bundled whether tracing is on or not — and headers are not part
//   of what replay compares, so even a bundle without them replays the same history.
import { defaultPayloadConverter, proxySinks, workflowInfo, type Headers, type Payload } from '@temporalio/workflow';
import { batched } from './sink-batches';
import { workflowLocal } from './workflow-local';
import { CALLER_HEADER, TRACE_HEADER, type Carrier, type FinishedSpan, type KeelTraceSinks, type SpanAttributes, type SpanRef } from './trace-header';

export { CALLER_HEADER, TRACE_HEADER, type Carrier, type FinishedSpan, type KeelTraceSinks, type SpanAttributes, type SpanRef } from './trace-header';

const { keelTrace } = proxySinks<KeelTraceSinks>();
// Sent once per activation (workflows/sink-batches.ts).
const exportSpan = batched<FinishedSpan>((spans) => keelTrace.spans(spans));

interface OpenSpan {
  ref: SpanRef;
  parent: string | null;
  name: string;
  start: number;
  attributes: SpanAttributes;
  links: Carrier[];
}

// This workflow's own (workflows/workflow-local.ts): every workflow on a worker thread shares the module.
const state = workflowLocal('trace', () => ({
  /** The span that started this workflow (a goal's, for its task agents). */
  inherited: null as SpanRef | null,
  /** Who started it (their trace context). */
  starter: null as Carrier | null,
  /** The request whose handler runs right now, if it carried a trace context. */
  caller: null as Carrier | null,
  /** What activities and children started now hang under. */
  active: null as SpanRef | null,
  kind: null as 'goal' | 'agent' | 'session' | null,
  root: null as OpenSpan | null,
  turn: null as OpenSpan | null,
  waits: new Map<string, OpenSpan>(),
  /** The requests of a session's messages not yet turned into turns, oldest first (turns take messages in order). */
  messages: [] as (Carrier | null)[],
}));

// ---- headers (called by workflows/trace-interceptors.ts) ------------------------------------

function decode(payload: Payload | undefined): unknown {
  if (!payload) return undefined;
  try {
    return defaultPayloadConverter.fromPayload(payload);
  } catch {
    return undefined;
  }
}

function asRef(value: unknown): SpanRef | null {
  const v = value as Partial<SpanRef> | null | undefined;
  return v && typeof v.trace === 'string' && typeof v.span === 'string' && v.trace.length <= 1000 && v.span.length <= 1000 ? { trace: v.trace, span: v.span } : null;
}

function asCarrier(value: unknown): Carrier | null {
  const v = value as Carrier | null | undefined;
  return v && typeof v.traceparent === 'string' && v.traceparent.length <= 100 ? { traceparent: v.traceparent, ...(typeof v.tracestate === 'string' && v.tracestate.length <= 512 ? { tracestate: v.tracestate } : {}) } : null;
}

/** The workflow starts: its parent span and its starter, from the start's headers. */
export function startedWith(headers: Headers): void {
  const s = state();
  s.inherited = asRef(decode(headers[TRACE_HEADER]));
  s.starter = asCarrier(decode(headers[CALLER_HEADER]));
}

/** A signal or update handler runs (synchronously, inside `run`) on behalf of this request. */
export function handling<T>(headers: Headers, run: () => T): T {
  const s = state();
  const previous = s.caller;
  s.caller = asCarrier(decode(headers[CALLER_HEADER]));
  try {
    return run();
  } finally {
    s.caller = previous;
  }
}

/** Headers of an activity or child started now: the current span. */
export function withCurrentSpan(headers: Headers): Headers {
  const s = state();
  return s.active ? { ...headers, [TRACE_HEADER]: defaultPayloadConverter.toPayload(s.active) } : headers;
}

/** Headers of a signal sent now (a goal forwarding an approval to its agent): the request it acts for. */
export function withCaller(headers: Headers): Headers {
  const s = state();
  return s.caller && !headers[CALLER_HEADER] ? { ...headers, [CALLER_HEADER]: defaultPayloadConverter.toPayload(s.caller) } : headers;
}

/** Headers of the next run (continue-as-new): what this one inherited. */
export function forNextRun(headers: Headers): Headers {
  const s = state();
  return {
    ...headers,
    ...(s.inherited ? { [TRACE_HEADER]: defaultPayloadConverter.toPayload(s.inherited) } : {}),
    ...(s.starter && !headers[CALLER_HEADER] ? { [CALLER_HEADER]: defaultPayloadConverter.toPayload(s.starter) } : {}),
  };
}

// ---- spans the workflow owns ----------------------------------------------------------------

const AGENT_OPERATION = { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.provider.name': 'anthropic' } as const;

function finish(span: OpenSpan, end: number, attributes: SpanAttributes = {}, error?: string): void {
  exportSpan({ ref: span.ref, parent: span.parent, name: span.name, start: span.start, end: Math.max(end, span.start), attributes: { ...span.attributes, ...attributes }, links: span.links, error });
}

/** A goal: one trace for all of it (every run, every agent), its root span open from the first run's start. */
export function beginGoal(goal: string): void {
  const s = state();
  const info = workflowInfo();
  const ref = { trace: `goal:${info.workflowId}:${info.firstExecutionRunId}`, span: 'goal' };
  s.kind = 'goal';
  s.active = ref;
  s.root = {
    ref,
    parent: null,
    name: 'invoke_agent keel-goal',
    start: info.startTime.getTime(),
    attributes: { ...AGENT_OPERATION, 'gen_ai.agent.name': 'keel-goal', 'gen_ai.agent.id': info.workflowId, 'gen_ai.conversation.id': info.workflowId, 'keel.goal': goal.slice(0, 200) },
    links: s.starter ? [s.starter] : [],
  };
}

/** A task agent: a child span of whoever started it (its goal), in the goal's trace. */
export function beginAgent(input: { role: string; taskId: string; attempt: number; goalId: string }): void {
  const s = state();
  const info = workflowInfo();
  const parent = s.inherited;
  const ref = { trace: parent?.trace ?? `agent:${info.workflowId}:${info.firstExecutionRunId}`, span: `agent:${info.workflowId}` };
  s.kind = 'agent';
  s.active = ref;
  s.root = {
    ref,
    parent: parent?.span ?? null,
    name: `invoke_agent ${input.role}`,
    start: info.startTime.getTime(),
    attributes: {
      ...AGENT_OPERATION,
      'gen_ai.agent.name': input.role,
      'gen_ai.agent.id': info.workflowId,
      'gen_ai.conversation.id': input.goalId,
      'keel.task.id': input.taskId,
      'keel.task.attempt': input.attempt,
    },
    links: [],
  };
}

/** A session: a trace per turn (opened by its events). */
export function beginSession(): void {
  const s = state();
  s.kind = 'session';
}

/** The workflow's own span ends (not at continue-as-new: the next run carries on with it). */
export function endRoot(attributes: SpanAttributes, error?: string): void {
  const s = state();
  if (!s.root) return;
  finish(s.root, Date.now(), attributes, error);
  s.root = null;
}

interface UsageLike {
  inputTokens?: number;
  outputTokens?: number;
  costUsd?: number;
}

/** Token and cost totals as span attributes (GenAI names where the conventions have one). */
export function usageAttributes(usage: UsageLike | undefined): SpanAttributes {
  if (!usage) return {};
  return {
    'gen_ai.usage.input_tokens': usage.inputTokens ?? 0,
    'gen_ai.usage.output_tokens': usage.outputTokens ?? 0,
    'keel.cost_usd': usage.costUsd ?? 0,
  };
}

type Traced = { kind: string } & Record<string, unknown>;
const str = (v: unknown): string => (typeof v === 'string' ? v : String(v));

function openWait(key: string, name: string, at: number, attributes: SpanAttributes): void {
  const s = state();
  if (!s.active || s.waits.has(key)) return;
  s.waits.set(key, { ref: { trace: s.active.trace, span: key }, parent: s.active.span, name, start: at, attributes, links: [] });
}

function closeWait(key: string, at: number, attributes: SpanAttributes, error?: string): void {
  const s = state();
  const wait = s.waits.get(key);
  if (!wait) return;
  s.waits.delete(key);
  // The human's request is a link: their own trace is not this goal's.
  if (s.caller) wait.links = [...wait.links, s.caller];
  finish(wait, at, attributes, error);
}

/** Every event the workflow logs passes here (workflows/host.ts): turns and approval waits become spans. */
export function traceEvent(event: Traced, at: number): void {
  const s = state();
  switch (event.kind) {
    case 'session.message_received':
      s.messages.push(s.caller);
      return;
    case 'turn.started': {
      if (s.kind !== 'session') return;
      const sender = s.messages.shift() ?? s.caller ?? s.starter;
      const info = workflowInfo();
      const turnId = str(event.turnId);
      const ref = { trace: `session:${info.workflowId}:${info.firstExecutionRunId}:${turnId}`, span: 'turn' };
      s.turn = {
        ref,
        parent: null,
        name: 'invoke_agent keel-session',
        start: at,
        attributes: { ...AGENT_OPERATION, 'gen_ai.agent.name': 'keel-session', 'gen_ai.agent.id': info.workflowId, 'gen_ai.conversation.id': info.workflowId, 'keel.turn.id': turnId },
        links: sender ? [sender] : [],
      };
      s.active = ref;
      return;
    }
    case 'turn.completed':
    case 'turn.interrupted':
    case 'turn.error': {
      if (s.kind !== 'session' || !s.turn) return;
      const outcome = event.kind.slice('turn.'.length);
      finish(
        s.turn,
        at,
        { 'keel.turn.outcome': outcome, ...(typeof event.reason === 'string' ? { 'keel.turn.reason': event.reason } : {}), ...usageAttributes(event.usage as UsageLike | undefined) },
        event.kind === 'turn.error' ? str(event.errorType) : undefined,
      );
      s.turn = null;
      s.active = null;
      return;
    }
    case 'tool.approval_requested':
      return openWait(`approval:${str(event.callId)}`, `await_approval ${str(event.toolName)}`, at, {
        'gen_ai.operation.name': 'await_approval',
        'gen_ai.tool.name': str(event.toolName),
        'gen_ai.tool.call.id': str(event.callId),
      });
    case 'tool.approved':
      return closeWait(`approval:${str(event.callId)}`, at, { 'keel.approval.decision': 'approved', 'keel.approval.approver': str(event.approver), 'keel.approval.scope': str(event.scope) });
    case 'tool.denied':
      return closeWait(`approval:${str(event.callId)}`, at, { 'keel.approval.decision': 'denied', 'keel.approval.by': str(event.by) });
    case 'tool.result':
      // Still waiting when the call ended: timed out or cancelled.
      return closeWait(`approval:${str(event.callId)}`, at, { 'keel.approval.decision': str(event.status) });
    case 'plan.approval_requested':
      return openWait(`plan-approval:${str(event.planVersion)}`, 'await_approval plan', at, { 'gen_ai.operation.name': 'await_approval', 'keel.plan.version': Number(event.planVersion) });
    case 'plan.approved':
      return closeWait(`plan-approval:${str(event.planVersion)}`, at, { 'keel.approval.decision': 'approved', 'keel.approval.by': str(event.by) });
    case 'plan.rejected':
      return closeWait(`plan-approval:${str(event.planVersion)}`, at, { 'keel.approval.decision': 'rejected' });
    default:
      return;
  }
}
