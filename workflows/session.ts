// The session workflow: one durable conversation (SPEC §1–4). Signals and updates are the
// session machine's events, applied on the machine host (workflows/host.ts); the turn
// runner executes the turn machine's directives. Long sessions continue as new, carrying
// the machine state (with its queue of messages), the conversation by reference,
// approvals, timers, finished turns and the event stream.
import { condition, makeContinueAsNewFunc, setHandler, uuid4, workflowInfo } from '@temporalio/workflow';
// Straight from the machines a session runs, not the barrel: the SDK evaluates a workflow's
// modules anew for every workflow, and the goal's machines are no business of a session's.
import type { SessionStats } from '../machines/index';
import { describeExhaustion } from '../machines/budget';
import { createSession, sessionEventFromTurn, sessionMachine, type SessionDirective, type SessionEvent, type SessionState } from '../machines/session';
import { defaultPolicy, type PolicyConfig, type PolicyOrigin, type SessionApproval } from '../machines/policy';
import { sessionSearchStatus } from '../machines/search-status';
import { SESSION_SIGNALS, sessionOptionsSchema, userMessageSchema, userMessageSignal, userMessageUpdate, type ControlResult, type LogEntry } from './definitions';
import { failureMessage, parsePayload as parse, parseStartInput } from './payloads';
import { refusal, validated } from './refusal';
import { ConversationLog } from './runtime';
import { TurnRunner, type ToolEntry } from './turn-runner';
import { streamedUsageOf } from './turn-results';
import { MachineHost, type Driven } from './host';
import { appendStreamTail, modelEvents, streamedText } from './model-stream';
import { sessionApprovalHandlers } from './session-approvals';
import { sessionControls } from './session-controls';
import { sessionQueries, sessionViews } from './session-views';
import { clientToolResultHandler } from './client-tool-results';
import { FinishedTurns } from './finished-turns';
import { awaitTurnHandlers, messageKnown } from './await-turn';
import { loadSetupWaiting } from './setup';
import { InfraWaiter } from './infra-wait';
import { WaitingAttribute } from './waiting-attribute';
import { infraWaitingKey } from '../machines/infra-retry';
import { handoverFits } from './handover-size';
import { ClientTools } from './client-tools';
import { resolveSessionOptions, type SessionCarry, type SessionResult } from './session-options';
import type { SessionOptions } from './protocol/session';
import { WorkspaceRouting } from './workspace-host';
import { hostMoveHandler } from './host-move';
import { listenForUpgradeNudge, upgradeOnContinue } from './versioning';
import { hasPatch, runFormat, stampedMemo } from './run-format';
import { forkConversation, SessionCheckpoints } from './session-checkpoints';
import { agentToolSetup, sessionSubAgents } from './session-sub-agents';
import { subAgentReportSignal, subAgentSlotSignal } from './protocol/sub-agents';

type StartTurn = Extract<SessionDirective, { type: 'start_turn' }>;

export type { ResolvedSessionOptions, SessionCarry, SessionResult } from './session-options';
export type { SessionOptions } from './protocol/session';

/** Running workflows that predate the hand-over started the next queued turn in the same run. */
const HANDOVER_PATCH = 'session-queue-handover';

export async function sessionWorkflow(input: SessionOptions, carry?: SessionCarry): Promise<SessionResult> {
  parseStartInput(sessionOptionsSchema, input, 'session');
  // Every default filled in once: this run uses these, and hands them to the next one.
  const options = resolveSessionOptions(input);
  const { storeDir } = options;
  // A workspace on one host's disk: everything that touches it runs there (workspace-host.ts).
  // An operator may move it to another host (`keel host move`, workflows/host-move.ts).
  const routing = new WorkspaceRouting(workflowInfo().taskQueue, options.workspaceHost, options.workspaceHostWaitMs);
  // A fork's first run starts from its parent's conversation at the fork point (workflows/session-checkpoints.ts).
  const conversation = new ConversationLog(carry?.conversation ?? forkConversation(options));
  let approvals: SessionApproval[] = carry?.approvals ?? [];
  let policy: PolicyConfig | null = carry?.policy ?? null;
  let policyOrigin: PolicyOrigin | null = carry?.policyOrigin ?? null;
  let tools: ToolEntry[] = carry?.tools ?? [];
  let toolsRef: string | null = carry?.toolsRef ?? null;
  let storeId: string | undefined = carry?.storeId;
  let done: { outcome: 'closed' | 'failed'; reason: string; stats: SessionStats } | null = null;
  let deferredTurn: StartTurn | null = carry?.deferredTurn ?? null;
  let handingOver = false;
  const finishedTurns = new FinishedTurns(carry?.finishedTurns);
  // What the agent must be told when its next turn starts (workflows/host-move.ts: a lost workspace).
  let agentNotice: string | null = carry?.agentNotice ?? null;
  const clientTools = new ClientTools(carry?.clientTools);
  // Known before the first handler runs: an awaitTurn buffered for this run may name it.
  if (deferredTurn !== null) finishedTurns.started(deferredTurn.turnId, deferredTurn.messageId);
  const run = (carry?.run ?? 0) + 1;
  // A run stamped by its starter (workflows/run-format.ts) was started showing `active`.
  const stamped = runFormat() >= 1;

  const host: MachineHost<LogEntry> = new MachineHost<LogEntry>({
    kind: 'session',
    workspace: options.workspace,
    idField: 'sessionId',
    signals: SESSION_SIGNALS,
    carry,
    tap: (event) => finishedTurns.see(event),
    view: () => ({ details: views.details(), status: session.state.status, searchStatus: sessionSearchStatus(session.state.status, stamped), pendingApprovals: views.pending().length }),
    live: () => (turns.state?.status === 'calling_llm' ? turns.modelCalls : []),
  });
  const sessionId = host.workflowId;
  // KeelWaiting: what the run waits out now (setup first, then its turns).
  const waitingAttribute = new WaitingAttribute(() => infraWaitingKey(setupWait.current ?? turns.infra.current));
  // Sub-agents (docs/sub-agents.md): with the `agents` option, `agent` calls start child agents.
  const subAgents = sessionSubAgents(options, sessionId, {
    tools: () => tools,
    toolsRef: () => toolsRef,
    storeId: () => storeId,
    policy: () => ({ policy: policy ?? defaultPolicy, approvals }),
    turn: () => turns.state,
    conversation: () => conversation.checkpoint(),
    route: () => routing.route,
    emit: host.publish,
    settled: (turnId, callId, usage) =>
      host.post(() => {
        if (session.state.status !== 'closed' && session.state.status !== 'failed') session.record('turn', { type: 'call_settled', turnId, callId, usage });
      }),
    changed: () => host.post(() => undefined),
  }, carry?.subAgentsStarted);
  const turns = new TurnRunner(
    {
      workspace: options.workspace,
      // Read at every call: a move sends the next one to the new host.
      get workspaceRoute() {
        return routing.route;
      },
      storeDir,
      model: options.model,
      maxTokens: options.maxTokens,
      system: options.system,
      approvalTimeoutMs: options.approvalTimeoutMs,
      maxParallelTools: options.maxParallelTools,
      retryBackoffMs: options.retryBackoffMs,
      modelActivity: options.modelActivity,
      compactAboveTokens: options.compactAboveTokens,
      thinking: options.thinking,
      promptCaching: options.promptCaching,
      promptCacheTtl: options.promptCacheTtl,
    },
    {
      queue: host.queue,
      timers: host.timers,
      conversation,
      now: host.now,
      stampAt: host.stampAt,
      tools: () => tools,
      toolsRef: () => toolsRef,
      storeId: () => storeId,
      policy: () => ({ policy: policy ?? defaultPolicy, approvals, headless: options.headless }),
      updateApprovals: (update) => (approvals = update(approvals)),
      emit: host.publish,
      infraChanged: () => waitingAttribute.refresh(),
      rejected: host.rejected,
      streamTail: (tail) => appendStreamTail(host.stream, tail),
      streamedText: (activityId) => streamedText(host.stream, activityId),
      streamedUsage: (activityId) => streamedUsageOf(modelEvents(host.stream), activityId),
      // With checkpoints, the turn is reported finished once its workspace checkpoint is written.
      finished: (result) =>
        checkpoints.afterTurn(result.turnId, () =>
          host.post(() => {
            finishedTurns.billed(result.turnId, result.usage);
            session.record('turn', sessionEventFromTurn(result.turnId, { type: 'finish', result }));
          }),
        ),
      asked: (turnId, callId, question) => host.post(() => session.record('turn', { type: 'input_requested', turnId, callId, question })),
      settled: (turnId, callId, usage) =>
        host.post(() => {
          finishedTurns.settled(turnId, usage);
          // A call cut by the session's close settles after it: the turn's figures take it, and
          // the ended session, which takes no event, is not sent one (no "event.rejected" after
          // "session.closed" in its log).
          if (session.state.status === 'closed' || session.state.status === 'failed') return;
          session.record('turn', { type: 'call_settled', turnId, callId, usage });
        }),
      observer: host.observer('turn'),
      clientTools,
      ...(subAgents !== null ? { subAgents } : {}),
    },
  );

  // ---- the session machine and its directives ----------------------------------------------
  const created = carry
    ? { state: sessionMachine.fromJSON(carry.session), directives: [] }
    : createSession({ sessionId, at: host.now(), limits: options.limits, maxConsecutiveErrors: options.maxConsecutiveErrors, idleTimeoutMs: options.idleTimeoutMs });
  const session: Driven<SessionState, SessionEvent, SessionDirective> = host.drive(sessionMachine, created.state, (d) => {
    switch (d.type) {
      case 'initialize':
        return initialize();
      case 'start_turn':
        return startTurn(d);
      case 'forward_to_turn': {
        // An event for a turn held back for the next run (interrupt, close…): it runs here after all.
        if (deferredTurn?.turnId === d.turnId) runTurn(takeDeferred());
        if (turns.turnId !== d.turnId) return;
        const result = turns.apply(d.event);
        if (!result.ok) host.rejected('session', result.error);
        return;
      }
      case 'cleanup':
        return host.post(() => session.record('cleanup', { type: 'cleanup_done' }));
      case 'complete':
        done = { outcome: d.outcome, reason: d.reason, stats: d.stats };
        return;
      default: {
        const never: never = d;
        throw new Error(`unknown session directive ${JSON.stringify(never)}`);
      }
    }
  });

  // When a new run is wanted (declared before any handler: a buffered message may start a turn at once).
  const turnsAtStart = session.state.turns;
  const limit = options.continueAsNewAfterTurns;
  const onSuggestion = options.continueAsNewWhenSuggested;
  const idle = () => !turns.busy && !checkpoints.busy && session.state.status !== 'initializing' && session.state.status !== 'closing';
  const quiet = () => idle() && (session.state.turnId === null || deferredTurn !== null);
  function wantsNewRun(): boolean {
    return MachineHost.wantsNewRun(onSuggestion, options.continueAsNewAfterEvents ?? null) || (limit !== null && session.state.turns - turnsAtStart >= limit);
  }

  function startTurn(d: StartTurn): void {
    finishedTurns.started(d.turnId, d.messageId);
    clientTools.started(d.turnId, d.messageId, tools.map((t) => t.spec.name));
    // Handing over: the machine's next turn starts in the next run, so a steady queue
    // cannot keep a session from continuing as new (the queue itself is in the state).
    if (wantsNewRun() && queueFits(d.text) && hasPatch(HANDOVER_PATCH)) {
      deferredTurn = d;
      return;
    }
    runTurn(d);
  }
  const queueFits = (extra = '') => handoverFits([extra, deferredTurn?.text ?? '', ...session.state.queue.map((q) => q.text)]);
  function runTurn(d: StartTurn): void {
    // A checkpoint or a rewind is being written: the turn starts when it is done.
    if (checkpoints.busy) return checkpoints.whenIdle(() => runTurn(d));
    const text = agentNotice === null ? d.text : `${agentNotice}\n\n${d.text}`;
    agentNotice = null;
    const result = turns.start(d.turnId, text, d.limits);
    if (!result.ok) host.rejected('start_turn', result.error);
  }
  function takeDeferred(): StartTurn {
    const d = deferredTurn!;
    deferredTurn = null;
    return d;
  }

  // Setup waits out a store or workspace host that is away (workflows/infra-wait.ts), and says so.
  const setupWait = new InfraWaiter({ now: host.now, emit: host.publish, changed: () => waitingAttribute.refresh() });
  function initialize(): void {
    // A fork lays its workspace out from its fork point first.
    const restored = checkpoints.forkRestore();
    if (restored === null) return setup();
    restored.then(setup, (error: unknown) => host.post(() => session.record('initialize', { type: 'init_failed', error: `the fork's workspace could not be laid out: ${failureMessage(error)}` })));
  }
  function setup(): void {
    loadSetupWaiting({ workspace: options.workspace, storeDir, policy: options.policy, for: { kind: 'session', mcp: options.mcp }, route: () => routing.route, model: options.model, ...agentToolSetup(options.agents) }, setupWait).then(
      (r) =>
        host.post(() => {
          // For good (a bad policy file, a foreign store): suspended with the reason; `restart` once fixed.
          if (!r.ok) return session.record('initialize', { type: 'init_failed', error: r.error, ...(r.permanent === true ? { suspend: true as const } : {}) });
          ({ policy, tools, toolsRef, storeId } = r);
          policyOrigin = r.origin ?? null;
          // Turn 0's checkpoint, begun before the first turn can start (it waits for it).
          checkpoints.baseline();
          session.record('initialize', { type: 'initialized' });
        }),
      // The activity's own error (ENOENT, …) is the cause under "Activity task failed".
      (error: unknown) => host.post(() => session.record('initialize', { type: 'init_failed', error: failureMessage(error) })),
    );
  }

  // ---- workspace checkpoints, fork and rewind (workflows/session-checkpoints.ts) --------------
  const checkpoints = new SessionCheckpoints(
    {
      options,
      conversation,
      route: () => routing.route,
      storeId: () => storeId,
      policy: () => policy,
      now: host.now,
      post: host.post,
      publish: host.publish,
      status: () => session.state.status,
      turnRunning: () => session.state.turnId !== null,
    },
    carry?.checkpoints,
    carry === undefined,
  );

  // ---- what people see (workflows/session-views.ts) ----------------------------------------------
  const views = sessionViews({ session, turns, finishedTurns, deferred: () => deferredTurn !== null, waiting: () => setupWait.waiting ?? turns.infra.waiting, ...(subAgents !== null ? { delegated: () => subAgents.pending() } : {}) });
  const { pending } = views;

  // ---- signals and updates -------------------------------------------------------------------
  const status = (): ControlResult => ({ status: session.state.status });
  // A message id is one turn. `sendMessage` was idempotent by id; `userMessage` posted a repeat
  // (a client asking again after no answer in time, `temporal workflow signal` run twice) as a
  // second turn. Asked only when a repeat arrives, so a history without one is unchanged.
  const queuedOrRunning = { queued: () => session.state.queue.map((m) => m.messageId), turnId: () => session.state.turnId };
  const repeated = (messageId: string | undefined): boolean => messageId !== undefined && messageKnown(finishedTurns, queuedOrRunning, messageId) && hasPatch(USER_MESSAGE_ONCE_PATCH);
  const userMessageEvent = (input: ReturnType<typeof messageInput>): Extract<SessionEvent, { type: 'user_message' }> => {
    const messageId = input.messageId ?? `msg-${uuid4()}`;
    if (input.clientTools !== undefined) clientTools.offer(messageId, input.clientTools);
    return { type: 'user_message', messageId, text: input.text };
  };
  setHandler(userMessageSignal, (raw) =>
    session.signalled('userMessage', () => {
      const input = parse(userMessageSchema, raw, 'userMessage');
      // A signal's repeat is refused by name (a `rejected` event says so); the update's is answered in postMessage.
      if (repeated(input.messageId)) throw new Error(`message ${input.messageId} was already received (queued, running or answered): one message id is one turn`);
      return userMessageEvent(input);
    }),
  );
  listenForUpgradeNudge();
  const messageInput = (raw: unknown, name: string) => validated(() => parse(userMessageSchema, raw, name));
  const validateMessage = (raw: unknown, name = 'userMessage'): void => {
    // No uuid4 here: validators do not run on replay.
    const input = messageInput(raw, name);
    session.mustAccept({ type: 'user_message', messageId: input.messageId ?? 'validating', text: input.text });
  };
  const postMessage = (raw: unknown, via: string) => {
    const input = messageInput(raw, via);
    if (repeated(input.messageId)) {
      // The update of a repeat answers as the first did, and posts nothing.
      const queue = session.state.queue;
      return { status: session.state.status, messageId: input.messageId!, queued: queue.some((m) => m.messageId === input.messageId), queueLength: queue.length };
    }
    const event = userMessageEvent(input);
    const wasActive = session.state.status === 'active';
    session.post(via, event);
    return { status: session.state.status, messageId: event.messageId, queued: !wasActive, queueLength: session.state.queue.length };
  };
  setHandler(userMessageUpdate, (raw) => postMessage(raw, 'update userMessage'), { validator: (raw) => validateMessage(raw) });
  // `send` posts and waits for its own message's turn (by id) in one update; `turnOf` waits by id.
  awaitTurnHandlers(finishedTurns, {
    status: () => session.state.status,
    queued: () => session.state.queue.map((m) => m.messageId),
    turnId: () => session.state.turnId,
    ended: () => done !== null,
    handingOver: () => handingOver,
    messageIdOf: (raw) => messageInput(raw, 'sendMessage').messageId ?? null,
    validateMessage: (raw) => {
      validateMessage(raw, 'sendMessage');
      // send() waits for its turn, and a session suspended on its budget starts none until
      // raised: it answers now, with the reason, instead of holding the caller.
      const s = session.state;
      if (s.status === 'suspended' && s.reason === 'budget' && s.exhaustion !== null) throw refusal('budget_exhausted', `the session is suspended: ${describeExhaustion(s.exhaustion)}; raise_budget first`);
    },
    postMessage: (raw) => postMessage(raw, 'update sendMessage').messageId,
  });

  // A client tool call's result, from the client that declared the tool (workflows/client-tool-results.ts).
  clientToolResultHandler({ turns, clientTools, current: views.current, post: host.post, rejected: host.rejected, status });

  sessionApprovalHandlers({ turns, pending, rejected: host.rejected, post: host.post, now: host.now, status, approvals: () => approvals, remember: (next) => (approvals = next), ...(subAgents !== null ? { delegated: subAgents } : {}) });
  if (subAgents !== null) setHandler(subAgentReportSignal, (raw) => host.post(() => subAgents.report(raw)));
  if (subAgents !== null) setHandler(subAgentSlotSignal, (raw) => host.post(() => subAgents.place(raw)));

  sessionControls({ session, now: host.now, status, authenticatedControls: options.authenticatedControls, ...(subAgents !== null ? { children: subAgents } : {}) });

  hostMoveHandler({
    workspace: options.workspace,
    routing,
    post: host.post,
    publish: host.publish,
    // A running turn hears it as a steer before its next model call; an idle session's next turn starts with it.
    tellAgent: (notice) => {
      const steered = session.state.turnId !== null && turns.turnId === session.state.turnId && turns.apply({ type: 'steer', text: notice }).ok;
      if (!steered) agentNotice = notice;
    },
  });

  // ---- queries -------------------------------------------------------------------------------
  sessionQueries({ sessionId, run, session, host, conversation, clientTools, setup: () => ({ tools, policy, policyOrigin }) }, views);

  // ---- run -----------------------------------------------------------------------------------
  host.start('session', () => session.state.status, () => {
    session.execute(created.directives);
    if (carry) host.rearm(carry.timers, (timerId) => session.record(`timer ${timerId}`, session.timerFired(timerId)));
    if (deferredTurn !== null) startTurn(takeDeferred());
  });

  for (;;) {
    await condition(() => done !== null || (quiet() && wantsNewRun()));
    if (done === null && queueFits()) {
      handingOver = true;
      if ((await host.settle(() => done !== null, quiet)) === 'done') break;
      // A message taken while the handlers finished may have made the queue too large to carry.
      if (queueFits()) {
        // Continue as new at a quiet point: no turn running, no activity in flight.
        const next: SessionCarry = {
          ...host.carry(),
          session: sessionMachine.toJSON(session.state),
          conversation: conversation.snapshot(40, 256 * 1024),
          approvals,
          policy: policy ?? defaultPolicy,
          policyOrigin,
          tools,
          toolsRef,
          ...(storeId !== undefined ? { storeId } : {}),
          run,
          deferredTurn,
          finishedTurns: finishedTurns.list(),
          ...(agentNotice !== null ? { agentNotice } : {}),
          ...(clientTools.carry() !== undefined ? { clientTools: clientTools.carry() } : {}),
          ...(checkpoints.carry() !== undefined ? { checkpoints: checkpoints.carry() } : {}),
          // No child is alive here (children run only inside a turn, and the session is quiet): only the count goes on.
          ...(subAgents !== null && subAgents.started > 0 ? { subAgentsStarted: subAgents.started } : {}),
        };
        // The resolved options: the next run starts with the defaults this one used.
        // A moved workspace: the next run starts on the host it was moved to.
        const moved = routing.host !== null && routing.host !== options.workspaceHost ? { ...options, workspaceHost: routing.host } : options;
        return makeContinueAsNewFunc<typeof sessionWorkflow>({ memo: stampedMemo(workflowInfo().memo), ...upgradeOnContinue() })(moved, next);
      }
      handingOver = false;
    }
    if (done !== null) break;
    // Too much queued to hand over: the held turn runs here, and the queue drains until it fits.
    host.post(() => {
      if (deferredTurn !== null) runTurn(takeDeferred());
    });
    await condition(() => done !== null || (deferredTurn === null && queueFits()));
  }

  const finished = done as unknown as { outcome: 'closed' | 'failed'; reason: string; stats: SessionStats };
  // Cancelled activities confirm that they stopped (a command's process is gone) before the session ends.
  await condition(() => !turns.busy);
  await host.finish();
  return { sessionId, outcome: finished.outcome, reason: finished.reason, stats: finished.stats, runs: run };
}

/** `userMessage` with a message id the session has is not a second turn (asked only when one comes). */
const USER_MESSAGE_ONCE_PATCH = 'user-message-once';
