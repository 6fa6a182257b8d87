// The session workflow: one durable conversation (SPEC §1–4). Signals and updates are the
// session machine's events; the turn runner executes the turn machine's directives. The
// workflow owns no rule of its own: it applies events, executes directives, and reports
// (event log, queries, search attributes). Long sessions continue as new, carrying the
// machine state, the conversation by reference, approvals, timers and the event stream.
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  defaultPayloadConverter,
  patched,
  proxyActivities,
  setCurrentDetails,
  setDefaultSignalHandler,
  setDefaultUpdateHandler,
  setHandler,
  upsertSearchAttributes,
  uuid4,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import { WorkflowStream, decodePayloadWire, type WorkflowStreamState } from '@temporalio/workflow-streams/workflow';
import type { ModelStreamEvent } from '../activities/llm';
import type { StoreActivities } from '../activities/conversation-store';
import type { McpBridge } from '../activities/mcp/index';
import type { ToolActivities } from '../activities/tools/index';
import {
  createSession,
  sessionEventFromTurn,
  sessionExhaustion,
  sessionMachine,
  type BudgetLimits,
  type LogEvent,
  type SessionDirective,
  type SessionEvent,
  type SessionState,
  type SessionStats,
  type TransitionError,
  type TurnEvent,
} from '../machines/index';
import { defaultPolicy, EXACT_APPROVALS_PATCH, legacySessionRuleFor, rememberApproval, sessionApprovalFor, type PolicyConfig, type PolicyConfigInput, type SessionApproval } from '../machines/policy';
import {
  answerSchema,
  answerSignal,
  answerUpdate,
  approveSchema,
  approveSignal,
  approveUpdate,
  closeSignal,
  closeUpdate,
  denySchema,
  denySignal,
  denyUpdate,
  EVENTS_TOPIC,
  eventsQuery,
  interruptSignal,
  interruptUpdate,
  MODEL_TOPIC,
  noPayloadSchema,
  pauseSignal,
  pauseUpdate,
  pendingApprovalsQuery,
  raiseBudgetSchema,
  raiseBudgetSignal,
  raiseBudgetUpdate,
  reasonSchema,
  resetSignal,
  resetUpdate,
  restartSignal,
  restartUpdate,
  resumeSignal,
  SESSION_SIGNALS,
  resumeUpdate,
  stateQuery,
  steerSchema,
  steerSignal,
  steerUpdate,
  stopSignal,
  stopUpdate,
  transcriptQuery,
  transcriptQuerySchema,
  usageQuery,
  userMessageSchema,
  userMessageSignal,
  userMessageUpdate,
  type ControlResult,
  type LogEntry,
  type PendingApproval,
  type RunnerEvent,
  type StateView,
  type TranscriptPage,
  type UsageView,
} from './definitions';
import { failureMessage, parsePayload as parse, parseStartInput, rejectUnknownUpdate, unknownSignal } from './payloads';
import { preview, previewValue } from './preview';
import { ConversationLog, SerialQueue, Timers, type ConversationSnapshot } from './runtime';
import { sessionOptionsSchema } from './start-input';
import { code, escapeMarkdown } from './markdown';
import { KeelKind, KeelPendingApprovals, KeelStatus, KeelWorkspace } from './search-attributes';
import { streamedUsageOf, TurnRunner, type ToolEntry } from './turn-runner';
import { eventsPage, heldEvents } from './event-log';
import { reportEvent } from './telemetry-sink';

type McpActivities = McpBridge['activities'];

export interface SessionOptions {
  /** Absolute path of the directory the tools work in. */
  workspace: string;
  model?: string;
  maxTokens?: number;
  system?: string;
  /** Over the workspace's .keel/policy.json: mode (read-only | ask | auto-edit | full-auto), allow/ask/deny rules. */
  policy?: PolicyConfigInput;
  /** No human will answer: `ask` becomes the policy's headless choice. */
  headless?: boolean;
  limits?: Partial<BudgetLimits>;
  maxConsecutiveErrors?: number;
  approvalTimeoutMs?: number | null;
  idleTimeoutMs?: number | null;
  maxParallelTools?: number;
  retryBackoffMs?: number[];
  /** Offer the tools of the worker's MCP servers (KEEL_MCP_CONFIG). */
  mcp?: boolean;
  /** Conversation store directory; default `<workspace>/.keel/store` (the worker's KEEL_STORE_DIR wins). */
  storeDir?: string;
  /** Continue as new after this many turns in one run. */
  continueAsNewAfterTurns?: number | null;
  /** Continue as new when the server suggests it (history size or length); default true. */
  continueAsNewWhenSuggested?: boolean;
  /** Overrides of the model activity's options (tests shorten retries). */
  modelActivity?: Partial<ActivityOptions>;
  /** Summarize older turns when the conversation exceeds this many estimated tokens (e.g. 150000 for a 200k window). */
  compactAboveTokens?: number;
  /** Extended thinking: up to this many tokens of thinking per call, on top of maxTokens. */
  thinking?: { budgetTokens: number };
}

/** What one run hands the next through continue-as-new. */
export interface SessionCarry {
  session: unknown;
  conversation: ConversationSnapshot;
  approvals: SessionApproval[];
  policy: PolicyConfig;
  tools: ToolEntry[];
  toolsRef: string | null;
  stream: WorkflowStreamState;
  /** Timers still running, by when they fire (workflow time, ms since the epoch). */
  timers: Record<string, number>;
  nextSeq: number;
  run: number;
}

export interface SessionResult {
  sessionId: string;
  outcome: 'closed' | 'failed';
  reason: string;
  stats: SessionStats;
  runs: number;
}

const DEFAULT_MODEL = 'claude-sonnet-4-6';
/** Event-log bytes kept across continue-as-new: the newest entries; older ones are trimmed (offsets stay). */
const STREAM_KEEP_BYTES = 192 * 1024;

export async function sessionWorkflow(options: SessionOptions, carry?: SessionCarry): Promise<SessionResult> {
  parseStartInput(sessionOptionsSchema, options, 'session');
  const info = workflowInfo();
  const sessionId = info.workflowId;
  const stream = new WorkflowStream(carry?.stream);
  const events = stream.topic<LogEntry>(EVENTS_TOPIC);
  const storeDir = options.storeDir ?? `${options.workspace.replace(/\/+$/, '')}/.keel/store`;
  const timers = new Timers();
  const conversation = new ConversationLog(carry?.conversation);
  let seq = carry?.nextSeq ?? 0;
  let approvals: SessionApproval[] = carry?.approvals ?? [];
  let policy: PolicyConfig | null = carry?.policy ?? null;
  let tools: ToolEntry[] = carry?.tools ?? [];
  let toolsRef: string | null = carry?.toolsRef ?? null;
  let done: { outcome: 'closed' | 'failed'; reason: string; stats: SessionStats } | null = null;
  const run = (carry?.run ?? 0) + 1;

  const now = () => Date.now();
  const publish = (event: LogEvent | RunnerEvent) => {
    const at = new Date(now()).toISOString();
    events.publish({ ...preview(event), seq: seq++, at, sessionId });
    reportEvent(event, at);
  };
  const rejected = (source: string, error: TransitionError) => {
    publish({ kind: 'event.rejected', source, machine: error.machine, state: error.state, event: error.event, code: error.code, message: error.message });
  };

  const queue = new SerialQueue(() => report());
  const turns = new TurnRunner(
    {
      workspace: options.workspace,
      storeDir,
      model: options.model ?? DEFAULT_MODEL,
      maxTokens: options.maxTokens ?? 4096,
      system: options.system,
      approvalTimeoutMs: options.approvalTimeoutMs ?? null,
      maxParallelTools: options.maxParallelTools ?? 4,
      retryBackoffMs: options.retryBackoffMs,
      modelActivity: options.modelActivity,
      compactAboveTokens: options.compactAboveTokens,
      thinking: options.thinking,
    },
    {
      queue,
      timers,
      conversation,
      now,
      tools: () => tools,
      toolsRef: () => toolsRef,
      policy: () => ({ policy: policy ?? defaultPolicy, approvals, headless: options.headless ?? false }),
      emit: publish,
      rejected,
      streamedText: (activityId) => streamedText(stream, activityId),
      streamedUsage: (activityId) => streamedUsageOf(modelEvents(stream), activityId),
      finished: (result) => queue.post(() => applyOrRecord('turn', sessionEventFromTurn(result.turnId, { type: 'finish', result }))),
      asked: (turnId, callId, question) => queue.post(() => applyOrRecord('turn', { type: 'input_requested', turnId, callId, question })),
    },
  );

  // ---- the session machine -------------------------------------------------------
  let session: SessionState;
  const initial: SessionDirective[] = [];
  if (carry) {
    session = sessionMachine.fromJSON(carry.session);
  } else {
    const created = createSession({
      sessionId,
      at: now(),
      limits: options.limits,
      maxConsecutiveErrors: options.maxConsecutiveErrors,
      idleTimeoutMs: options.idleTimeoutMs ?? null,
    });
    session = created.state;
    initial.push(...created.directives);
  }

  function applySession(event: SessionEvent): ReturnType<typeof sessionMachine.transition> {
    const result = sessionMachine.transition(session, event);
    if (!result.ok) return result;
    session = result.state;
    for (const directive of result.directives) executeSession(directive);
    return result;
  }

  function applyOrRecord(source: string, event: SessionEvent | null): void {
    if (event === null) return;
    const result = applySession(event);
    if (!result.ok) rejected(source, result.error);
  }

  function executeSession(d: SessionDirective): void {
    switch (d.type) {
      case 'emit_event':
        publish(d.event);
        return;
      case 'start_timer':
        timers.start(d.timerId, d.durationMs, () => queue.post(() => applyOrRecord(`timer ${d.timerId}`, { type: 'timer_fired', timerId: d.timerId })), now());
        return;
      case 'cancel_timer':
        timers.cancel(d.timerId);
        return;
      case 'initialize':
        initialize();
        return;
      case 'start_turn': {
        const result = turns.start(d.turnId, d.text, d.limits);
        if (!result.ok) rejected('start_turn', result.error);
        return;
      }
      case 'forward_to_turn': {
        if (turns.turnId !== d.turnId) return;
        const result = turns.apply(d.event);
        if (!result.ok) rejected('session', result.error);
        return;
      }
      case 'cleanup':
        queue.post(() => applyOrRecord('cleanup', { type: 'cleanup_done' }));
        return;
      case 'complete':
        done = { outcome: d.outcome, reason: d.reason, stats: d.stats };
        return;
      default: {
        const never: never = d;
        throw new Error(`unknown session directive ${JSON.stringify(never)}`);
      }
    }
  }

  function initialize(): void {
    const { listTools, loadPolicy } = proxyActivities<ToolActivities>({ startToCloseTimeout: '1 minute', retry: { maximumAttempts: 3 } });
    const { listMcpTools } = proxyActivities<McpActivities>({ startToCloseTimeout: '2 minutes', retry: { maximumAttempts: 2 } });
    const { storeSegment } = proxyActivities<StoreActivities>({ startToCloseTimeout: '1 minute', retry: { maximumAttempts: 5 } });
    void (async () => {
      const [builtin, loaded, mcp] = await Promise.all([
        listTools(),
        loadPolicy({ workspace: options.workspace, ...(options.policy !== undefined ? { options: options.policy } : {}) }),
        options.mcp ? listMcpTools() : Promise.resolve({ tools: [], errors: [] }),
      ]);
      if (!loaded.ok) return { ok: false as const, error: loaded.error };
      const entries: ToolEntry[] = [
        ...builtin.map((t) => ({ spec: t.spec, readOnly: t.readOnly, activityOptions: t.activityOptions })),
        ...mcp.tools.map((t) => ({ spec: t.spec, readOnly: t.readOnly, activityOptions: t.activityOptions, mcp: true })),
      ];
      // The definitions go to the store once; every model call then names them by id.
      const ref = await storeSegment({ store: storeDir, parent: null, items: entries.map((t) => t.spec) });
      return { ok: true as const, policy: loaded.policy, tools: entries, toolsRef: ref };
    })().then(
      (r) =>
        queue.post(() => {
          if (r.ok) {
            policy = r.policy;
            tools = r.tools;
            toolsRef = r.toolsRef;
            applyOrRecord('initialize', { type: 'initialized' });
          } else {
            applyOrRecord('initialize', { type: 'init_failed', error: r.error });
          }
        }),
      // The activity's own error (ENOENT, …) is the cause under "Activity task failed".
      (error: unknown) => queue.post(() => applyOrRecord('initialize', { type: 'init_failed', error: failureMessage(error) })),
    );
  }

  // ---- what people see: search attributes, details ------------------------------
  let reported = '';
  function pending(): PendingApproval[] {
    const turnId = turns.turnId;
    if (turnId === null || session.turnId !== turnId) return [];
    return turns.pendingApprovals().map((p) => ({ ...p, turnId }));
  }
  function report(): void {
    // Details are workflow metadata (no history); search attributes change only when they differ.
    setCurrentDetails(details());
    const approvalsWaiting = pending().length;
    const key = `${session.status}|${approvalsWaiting}`;
    if (key === reported) return;
    reported = key;
    upsertSearchAttributes([
      { key: KeelStatus, value: session.status },
      { key: KeelPendingApprovals, value: approvalsWaiting },
    ]);
  }
  function details(): string {
    const s = session;
    const lines = [
      `**${escapeMarkdown(s.status)}**${'reason' in s ? ` (${escapeMarkdown(s.reason)})` : ''} · ${s.turns} turns · ${s.queue.length} queued`,
      `usage: ${s.usage.inputTokens} in / ${s.usage.outputTokens} out tokens, $${s.usage.costUsd.toFixed(4)}`,
    ];
    const waiting = pending();
    if (waiting.length > 0) lines.push(`waiting for approval: ${waiting.map((p) => `${code(p.name)} (${code(p.callId)})`).join(', ')}`);
    if (s.question) lines.push(`question: ${escapeMarkdown(s.question.question)}`);
    return lines.join('\n\n');
  }

  function usageView(): UsageView {
    return {
      usage: session.usage,
      limits: session.config.limits,
      turns: session.turns,
      toolCalls: session.toolCalls,
      exhaustion: sessionExhaustion(session),
      turnUsage: turns.state && session.turnId === turns.turnId ? turns.state.usage : null,
    };
  }

  // ---- signals and updates -------------------------------------------------------
  const mustAccept = (event: SessionEvent) => {
    const r = sessionMachine.transition(session, event);
    if (!r.ok) throw new Error(r.error.message);
  };
  const status = (): ControlResult => ({ status: session.status });

  /** A session event from a signal: applied, or recorded as rejected. */
  const signalled = (name: string, build: () => SessionEvent) => {
    queue.post(() => {
      let event: SessionEvent;
      try {
        event = build();
      } catch (error) {
        rejected(`signal ${name}`, { code: 'guard_failed', machine: 'session', state: session.status, event: name, message: (error as Error).message });
        return;
      }
      applyOrRecord(`signal ${name}`, event);
    });
  };
  /** An update's effect: apply (the validator already checked it would be accepted). */
  const updated = (name: string, event: SessionEvent): ControlResult => {
    queue.post(() => applyOrRecord(`update ${name}`, event));
    return status();
  };

  const userMessageEvent = (raw: unknown): Extract<SessionEvent, { type: 'user_message' }> => {
    const input = parse(userMessageSchema, raw, 'userMessage');
    return { type: 'user_message', messageId: input.messageId ?? `msg-${uuid4()}`, text: input.text };
  };
  setHandler(userMessageSignal, (raw) => signalled('userMessage', () => userMessageEvent(raw)));
  setHandler(
    userMessageUpdate,
    (raw) => {
      const event = userMessageEvent(raw);
      const wasActive = session.status === 'active';
      updated('userMessage', event);
      return { status: session.status, messageId: event.messageId, queued: !wasActive, queueLength: session.queue.length };
    },
    {
      validator: (raw) => {
        const input = parse(userMessageSchema, raw, 'userMessage');
        mustAccept({ type: 'user_message', messageId: input.messageId ?? 'validating', text: input.text });
      },
    },
  );

  // approve / deny act on the turn's tool call; the session machine has no say in them.
  type Approval = { callId: string; event: TurnEvent; rule: string | null; remember: SessionApproval | null; legacy?: string };
  const approvalEvent = (raw: unknown): Approval => {
    const input = parse(approveSchema, raw, 'approve');
    const call = pending().find((p) => p.callId === input.callId);
    if (!call) throw new Error(unknownCall(input.callId));
    const approver = input.approver ?? 'human';
    const event: TurnEvent = { type: 'tool', callId: input.callId, event: { type: 'approved', approver, scope: input.scope ?? 'once' } };
    if (input.scope !== 'session') {
      if (input.rule !== undefined) throw new Error('approve: a rule is remembered only with scope "session"');
      return { callId: input.callId, event, rule: null, remember: null };
    }
    // The exact call unless the human gave a rule; the grant time is filled in when applied.
    const grant = sessionApprovalFor({ tool: call.name, input: call.input }, input.rule, { grantedBy: approver });
    if (!grant.ok) throw new Error(`approve: ${grant.error}`);
    const legacy = input.rule === undefined ? legacySessionRuleFor({ tool: call.name, input: call.input }) : undefined;
    return { callId: input.callId, event, rule: grant.label, remember: grant.approval, ...(legacy ? { legacy } : {}) };
  };
  // Histories recorded before approvals were exact replay with the rule they remembered then.
  const replayable = (a: Approval): Approval =>
    a.legacy === undefined || patched(EXACT_APPROVALS_PATCH) ? a : { ...a, rule: a.legacy, remember: { rule: a.legacy, grantedBy: 'human' } };
  const unknownCall = (callId: string) => {
    const waiting = pending().map((p) => p.callId);
    return `unknown call id ${callId}: ${waiting.length === 0 ? 'no tool call is waiting for approval' : `waiting for approval: ${waiting.join(', ')}`}`;
  };
  const applyApproval = (source: string, a: { event: TurnEvent; remember: SessionApproval | null }) => {
    const r = turns.apply(a.event);
    if (!r.ok) return rejected(source, r.error);
    if (a.remember !== null) approvals = rememberApproval(approvals, { ...a.remember, grantedAt: new Date(now()).toISOString() });
  };
  setHandler(approveSignal, (raw) =>
    queue.post(() => {
      try {
        applyApproval('signal approve', replayable(approvalEvent(raw)));
      } catch (error) {
        rejected('signal approve', { code: 'guard_failed', machine: 'turn', state: turns.state?.status ?? 'none', event: 'approved', message: (error as Error).message });
      }
    }),
  );
  setHandler(
    approveUpdate,
    (raw) => {
      const a = replayable(approvalEvent(raw));
      queue.post(() => applyApproval('update approve', a));
      return { status: session.status, callId: a.callId, sessionRule: a.rule };
    },
    {
      validator: (raw) => {
        const a = approvalEvent(raw);
        const r = turns.check(a.event);
        if (r && !r.ok) throw new Error(r.error.message);
      },
    },
  );
  const denialEvent = (raw: unknown): TurnEvent => {
    const input = parse(denySchema, raw, 'deny');
    if (!pending().some((p) => p.callId === input.callId)) throw new Error(unknownCall(input.callId));
    return { type: 'tool', callId: input.callId, event: { type: 'denied', ...(input.reason ? { reason: input.reason } : {}) } };
  };
  setHandler(denySignal, (raw) =>
    queue.post(() => {
      try {
        const r = turns.apply(denialEvent(raw));
        if (!r.ok) rejected('signal deny', r.error);
      } catch (error) {
        rejected('signal deny', { code: 'guard_failed', machine: 'turn', state: turns.state?.status ?? 'none', event: 'denied', message: (error as Error).message });
      }
    }),
  );
  setHandler(
    denyUpdate,
    (raw) => {
      const event = denialEvent(raw);
      queue.post(() => {
        const r = turns.apply(event);
        if (!r.ok) rejected('update deny', r.error);
      });
      return status();
    },
    {
      validator: (raw) => {
        const r = turns.check(denialEvent(raw));
        if (r && !r.ok) throw new Error(r.error.message);
      },
    },
  );

  const simple: [string, typeof interruptSignal | typeof resumeSignal, typeof interruptUpdate | typeof resumeUpdate, (raw: unknown) => SessionEvent][] = [
    ['interrupt', interruptSignal, interruptUpdate, (raw) => ({ type: 'interrupt', ...reasonOf(raw, 'interrupt') })],
    ['pause', pauseSignal, pauseUpdate, (raw) => ({ type: 'pause', ...reasonOf(raw, 'pause') })],
    ['close', closeSignal, closeUpdate, (raw) => ({ type: 'close', ...reasonOf(raw, 'close') })],
    ['resume', resumeSignal, resumeUpdate, (raw) => (parse(noPayloadSchema, raw, 'resume'), { type: 'resume' })],
    ['stop', stopSignal, stopUpdate, (raw) => (parse(noPayloadSchema, raw, 'stop'), { type: 'stop' })],
    ['reset', resetSignal, resetUpdate, (raw) => (parse(noPayloadSchema, raw, 'reset'), { type: 'reset' })],
    ['restart', restartSignal, restartUpdate, (raw) => (parse(noPayloadSchema, raw, 'restart'), { type: 'restart' })],
  ];
  const reasonOf = (raw: unknown, name: string): { reason?: string } => {
    const input = parse(reasonSchema, raw, name);
    return input?.reason ? { reason: input.reason } : {};
  };
  for (const [name, signal, update, build] of simple) {
    setHandler(signal as typeof interruptSignal, (raw?: unknown) => signalled(name, () => build(raw)));
    setHandler(update as typeof interruptUpdate, (raw?: unknown) => updated(name, build(raw)), { validator: (raw?: unknown) => mustAccept(build(raw)) });
  }
  const steerEvent = (raw: unknown): SessionEvent => ({ type: 'steer', text: parse(steerSchema, raw, 'steer').text });
  setHandler(steerSignal, (raw) => signalled('steer', () => steerEvent(raw)));
  setHandler(steerUpdate, (raw) => updated('steer', steerEvent(raw)), { validator: (raw) => mustAccept(steerEvent(raw)) });
  const answerEvent = (raw: unknown): SessionEvent => ({ type: 'answer', text: parse(answerSchema, raw, 'answer').text });
  setHandler(answerSignal, (raw) => signalled('answer', () => answerEvent(raw)));
  setHandler(answerUpdate, (raw) => updated('answer', answerEvent(raw)), { validator: (raw) => mustAccept(answerEvent(raw)) });
  const raiseEvent = (raw: unknown): SessionEvent => {
    const limits = parse(raiseBudgetSchema, raw, 'raiseBudget');
    return { type: 'raise_budget', limits: Object.fromEntries(Object.entries(limits).filter(([, v]) => v !== undefined)), at: now() };
  };
  setHandler(raiseBudgetSignal, (raw) => signalled('raiseBudget', () => raiseEvent(raw)));
  setHandler(raiseBudgetUpdate, (raw) => updated('raiseBudget', raiseEvent(raw)), { validator: (raw) => mustAccept(raiseEvent(raw)) });

  // ---- queries ---------------------------------------------------------------------
  setHandler(pendingApprovalsQuery, () => pending());
  setHandler(usageQuery, () => usageView());
  setHandler(transcriptQuery, (raw) => {
    const input = parse(transcriptQuerySchema, raw, 'transcript') ?? {};
    const from = input.from ?? Math.max(conversation.first, conversation.total - (input.limit ?? 50));
    // A refusal adds no message (nothing the model did not say is stored), so the
    // transcript lists the turns that ended refused, from the event log, beside them.
    const refusals: TranscriptPage['refusals'] = [];
    for (const entry of heldEvents<LogEntry>(stream)) {
      if (entry.kind === 'turn.refused') refusals.push({ turnId: entry.turnId, at: entry.at, category: entry.category, explanation: entry.explanation });
    }
    return { total: conversation.total, firstAvailable: conversation.first, from: Math.max(from, conversation.first), messages: conversation.page(from, input.limit ?? 50), head: conversation.head, refusals };
  });
  setHandler(eventsQuery, (raw) => eventsPage<LogEntry>(stream, parse(transcriptQuerySchema, raw, 'events') ?? {}, seq));
  setHandler(stateQuery, (): StateView => {
    const turn = turns.state && session.turnId === turns.turnId ? turns.state : null;
    return {
      sessionId,
      status: session.status,
      reason: 'reason' in session ? session.reason : 'error' in session ? session.error : null,
      session: previewValue(session),
      turn: turn ? { turnId: turn.config.turnId, status: turn.status, step: turn.status === 'idle' ? null : turn.step } : null,
      queueLength: session.queue.length,
      pendingApprovals: pending(),
      question: session.question,
      usage: usageView(),
      run,
      nextEventSeq: seq,
      tools: tools.map((t) => t.spec.name),
    };
  });

  // A signal or update of a name the session does not know is recorded / refused, never
  // left buffered in silence (a misspelled `aprove` used to vanish). Registered after every
  // named handler: a default handler takes the signals and updates already buffered.
  setDefaultSignalHandler((name) => queue.post(() => publish(unknownSignal('session', session.status, name, SESSION_SIGNALS))));
  setDefaultUpdateHandler((name) => rejectUnknownUpdate(name, SESSION_SIGNALS));

  // ---- start ---------------------------------------------------------------------------
  upsertSearchAttributes([
    { key: KeelKind, value: 'session' },
    { key: KeelWorkspace, value: options.workspace },
  ]);
  queue.post(() => {
    for (const d of initial) executeSession(d);
    if (carry) {
      // Timers outlive the run: re-arm each with what was left of it.
      for (const [timerId, firesAt] of Object.entries(carry.timers)) {
        const left = Math.max(1, firesAt - now());
        timers.start(timerId, left, () => queue.post(() => applyOrRecord(`timer ${timerId}`, { type: 'timer_fired', timerId })), now());
      }
    }
  });

  const turnsAtStart = session.turns;
  const limit = options.continueAsNewAfterTurns ?? null;
  const quiet = () => session.turnId === null && !turns.busy && session.status !== 'initializing' && session.status !== 'closing';
  const onSuggestion = options.continueAsNewWhenSuggested ?? true;
  const wantsNewRun = () =>
    quiet() && ((onSuggestion && workflowInfo().continueAsNewSuggested) || (limit !== null && session.turns - turnsAtStart >= limit));
  await condition(() => done !== null || wantsNewRun());
  if (done === null) {
    stream.detachPollers();
    // A message handled while the handlers finish may start a turn: wait for quiet again.
    for (;;) {
      await condition(allHandlersFinished);
      if (done !== null || quiet()) break;
      await condition(() => done !== null || quiet());
    }
  }

  if (done === null) {
    // Continue as new at a quiet point: no turn in flight, no activity running.
    const streamState = stream.getState();
    let kept = 0;
    let trim = streamState.log.length;
    while (trim > 0 && kept + streamState.log[trim - 1]!.data.length <= STREAM_KEEP_BYTES) kept += streamState.log[--trim]!.data.length;
    const next: SessionCarry = {
      session: sessionMachine.toJSON(session),
      conversation: conversation.snapshot(40, 256 * 1024),
      approvals,
      policy: policy ?? defaultPolicy,
      tools,
      toolsRef,
      stream: trim > 0 ? { ...streamState, log: streamState.log.slice(trim), base_offset: streamState.base_offset + trim } : streamState,
      timers: timers.deadlines(),
      nextSeq: seq,
      run,
    };
    return continueAsNew<typeof sessionWorkflow>(options, next);
  }

  const finished = done as { outcome: 'closed' | 'failed'; reason: string; stats: SessionStats };
  // Cancelled activities confirm that they stopped (a command's process is gone) before the session ends.
  await condition(() => !turns.busy);
  report();
  // Let subscribers read the last events before the workflow completes.
  stream.detachPollers();
  await condition(allHandlersFinished);
  return { sessionId, outcome: finished.outcome, reason: finished.reason, stats: finished.stats, runs: run };
}

/** Text the model streamed for one call (its latest attempt), read from the workflow's own stream. */
function streamedText(stream: WorkflowStream, activityId: string): string {
  let attempt = -1;
  let text = '';
  for (const item of stream.getState().log) {
    if (item.topic !== MODEL_TOPIC) continue;
    let event: ModelStreamEvent;
    try {
      event = decodeModelEvent(item.data);
    } catch {
      continue;
    }
    if (event.callId !== activityId) continue;
    if (event.attempt !== attempt) {
      if (event.attempt < attempt) continue;
      attempt = event.attempt;
      text = '';
    }
    if (event.kind === 'delta' && event.block === 'text') text += event.text;
  }
  return text;
}

function* modelEvents(stream: WorkflowStream): Generator<ModelStreamEvent> {
  for (const item of stream.getState().log) {
    if (item.topic !== MODEL_TOPIC) continue;
    try {
      yield decodeModelEvent(item.data);
    } catch {
      continue;
    }
  }
}

function decodeModelEvent(wire: string): ModelStreamEvent {
  return defaultPayloadConverter.fromPayload<ModelStreamEvent>(decodePayloadWire(wire));
}
