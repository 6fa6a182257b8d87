// Runs one turn machine at a time: applies events to it and executes its directives —
// model calls and tools as activities in cancellation scopes, policy checks with the pure
// policy, timers, conversation appends. It decides nothing itself. The session workflow
// drives it, and the goal workflow's child agents can drive it the same way.
import { CancellationScope, isCancellation, patched, proxyActivities, sleep } from '@temporalio/workflow';
import type { ModelActivities, ModelCallInput } from '../activities/llm';
import { modelActivityOptions } from '../activities/llm-options';
import type { StoreActivities } from '../activities/conversation-store';
import type { CallUsage, TransitionResult, TurnLimits } from '../machines/index';
import { createTurn, pendingApprovals, turnMachine, type TurnDirective, type TurnEvent, type TurnState } from '../machines/turn';
import { afterStoreFailure } from '../machines/conversation-repair';
import { assertNever, observe } from '../machines/core';
import { evaluatePolicy, type SessionApproval } from '../machines/policy';
import { FINISH_TASK } from '../machines/task-outcome';
import type { ConversationCheckpoint, ConversationLog } from './runtime';
import { modelToolOf } from './client-tools';
import { effectiveMaxTokens, raisedMaxTokens, thinkingOf, type TurnHost, type TurnRunnerConfig } from './turn-config';
import { callFailureOf, modelFailure, modelResponse, settledBeyond } from './turn-results';
import { InfraWaiter } from './infra-wait';
import { TurnTools } from './turn-tools';

export { effectiveMaxTokens, raisedMaxTokens, type ToolEntry, type TurnHost, type TurnRunnerConfig } from './turn-config';

const ASK_TOOL = 'ask_user';
/** Runs with this patch count an interrupted call's usage until its connection closed (`settled`). */
export const SETTLED_USAGE_PATCH = 'interrupted-call-settled-usage';
/** Client tools are decided by the policy (runs before it allowed every one). */
const CLIENT_TOOLS_BY_POLICY = 'client-tools-by-policy';

export class TurnRunner {
  state: TurnState | null = null;
  /** In-flight activities by the machines' activity ids. */
  private readonly scopes = new Map<string, CancellationScope>();
  private readonly inflight = new Set<string>();
  /** The tool calls' activities and the approvals they run under. */
  private readonly tools: TurnTools;
  /** The input tokens the last response reported, for the stored conversation it was measured on (proactive compaction). */
  private lastInput: { head: string | null; tokens: number } | null = null;
  /** What each interrupted model call was counted for when it was interrupted (null: nothing), until its connection closes. */
  private readonly countedAtInterrupt = new Map<string, CallUsage | null>();
  /** The conversation before this turn's message: a refused turn goes back to it. */
  private beforeTurn: ConversationCheckpoint | null = null;
  /** A model call waiting out its conversation store (machines/infra-retry.ts). */
  readonly infra: InfraWaiter;

  private readonly transition: (state: TurnState, event: TurnEvent) => TransitionResult<TurnState, TurnDirective>;

  constructor(
    private readonly config: TurnRunnerConfig,
    private readonly host: TurnHost,
  ) {
    this.infra = new InfraWaiter({ now: () => host.now(), emit: (event) => host.emit(event), changed: () => host.infraChanged?.() });
    this.transition = host.observer ? observe(turnMachine, host.observer) : (state, event) => turnMachine.transition(state, event);
    this.tools = new TurnTools(config, host, {
      track: (activityId, run) => this.track(activityId, run),
      deliver: (turnId, source, event) => this.deliver(turnId, source, event),
      infra: () => this.infra,
    });
  }

  /** A human approved `callId` for the rest of the session, remembered as `approval`: its run binds the files it runs. */
  approvedForSession(callId: string, approval: SessionApproval): void {
    this.tools.approvedForSession(callId, approval);
  }

  get turnId(): string | null {
    return this.state?.config.turnId ?? null;
  }

  /** The model calls in flight, by call id (their activity id, which their live text is keyed by). */
  get modelCalls(): string[] {
    return [...this.inflight].filter((id) => id.startsWith('model:'));
  }

  /** True while an activity of any turn is still running (or confirming its cancellation). */
  get busy(): boolean {
    return this.inflight.size > 0;
  }

  pendingApprovals(): ReturnType<typeof pendingApprovals> {
    return this.state === null ? [] : pendingApprovals(this.state);
  }

  /** Creates the turn and applies `start` (the session's start_turn directive). */
  start(turnId: string, text: string, limits: TurnLimits): TransitionResult<TurnState, TurnDirective> {
    const tools = this.host.tools();
    this.infra.drop();
    this.beforeTurn = this.host.conversation.checkpoint();
    // Client tools run side by side: the client runs every call of a step at once.
    const clientNames = this.host.clientTools?.of(turnId).map((t) => t.name) ?? [];
    this.state = createTurn({
      turnId,
      limits,
      readOnlyTools: [...tools.filter((t) => t.readOnly).map((t) => t.spec.name), ...clientNames],
      askTool: tools.some((t) => t.spec.name === ASK_TOOL) ? ASK_TOOL : null,
      finishTool: tools.some((t) => t.spec.name === FINISH_TASK) ? FINISH_TASK : null,
      approvalTimeoutMs: this.config.approvalTimeoutMs,
      maxParallelTools: this.config.maxParallelTools,
      ...(this.config.retryBackoffMs ? { retryBackoffMs: this.config.retryBackoffMs } : {}),
      ...(this.config.unattended?.() === true ? { retryRow: 'unattended_turn' as const } : {}),
      maxTokens: effectiveMaxTokens(this.config),
      raisedMaxTokens: raisedMaxTokens(this.config),
    });
    // Where the turn's user message lands: a repair keeps every user message (conversation-repair.ts).
    this.host.conversation.turnStarted(turnId);
    return this.apply({ type: 'start', text });
  }

  /** Would the turn take this event now? (update validators) */
  check(event: TurnEvent): TransitionResult<TurnState, TurnDirective> | null {
    if (this.state === null) return null;
    return turnMachine.transition(this.state, this.complete(event));
  }

  /** Applies an event to the turn in flight and executes the directives. */
  apply(event: TurnEvent): TransitionResult<TurnState, TurnDirective> {
    const state = this.state;
    if (state === null) {
      return { ok: false, error: { code: 'not_allowed', machine: 'turn', state: 'none', event: event.type, message: 'turn: no turn is running' } };
    }
    const result = this.transition(state, this.complete(event));
    if (!result.ok) return result;
    this.state = result.state;
    for (const directive of result.directives) this.execute(state.config.turnId, directive);
    return result;
  }

  /** An interrupt during a model call carries what the model had said so far. */
  private complete(event: TurnEvent): TurnEvent {
    if (event.type === 'interrupt' && this.state?.status === 'calling_llm' && event.partialText === undefined) {
      const usage = this.host.streamedUsage?.(this.state.activityId) ?? null;
      this.countedAtInterrupt.set(this.state.activityId, usage);
      return { ...event, partialText: this.host.streamedText(this.state.activityId), ...(usage !== null ? { partialUsage: usage } : {}) };
    }
    return event;
  }

  /** Applies an event that arrived later (activity result, timer) if its turn is still the one in flight. */
  private deliver(turnId: string, source: string, event: TurnEvent): void {
    this.host.queue.post(() => {
      if (this.turnId !== turnId) {
        this.host.rejected(source, { code: 'guard_failed', machine: 'turn', state: 'none', event: event.type, message: `turn: ${turnId} is over` });
        return;
      }
      const result = this.apply(event);
      if (!result.ok) this.host.rejected(source, result.error);
    });
  }

  private execute(turnId: string, d: TurnDirective): void {
    switch (d.type) {
      case 'emit_event':
        this.host.emit(d.event);
        return;
      case 'start_timer':
        this.host.timers.start(d.timerId, d.durationMs, () => this.deliver(turnId, `timer ${d.timerId}`, { type: 'timer_fired', timerId: d.timerId }), this.host.now());
        return;
      case 'cancel_timer':
        this.host.timers.cancel(d.timerId);
        return;
      case 'cancel_activity':
        this.scopes.get(d.activityId)?.cancel();
        return;
      case 'append_messages':
        this.host.conversation.append(d.messages);
        return;
      case 'rollback_turn':
        if (this.beforeTurn !== null) this.host.conversation.rollback(this.beforeTurn);
        return;
      case 'call_model':
        this.callModel(turnId, d);
        return;
      case 'check_policy': {
        // A client tool is judged as one (kind `client`: allowed unless a rule says otherwise);
        // any other by its kind, the policy's own for a built-in tool.
        const client = this.host.clientTools?.has(turnId, d.name) === true;
        const { policy, approvals, headless } = this.host.policy();
        const verdict = evaluatePolicy(policy, { tool: d.name, input: d.input, workspace: this.config.workspace, kind: client ? 'client' : this.tools.kindOf(d.name) }, { headless, approvals });
        // Runs from before the policy decided client tools allowed them all: one that a rule
        // would not allow runs as it ran (the marker is asked only then, so nothing else records it).
        if (client && verdict.decision !== 'allow' && !patched(CLIENT_TOOLS_BY_POLICY)) {
          this.deliver(turnId, 'policy', { type: 'tool', callId: d.callId, event: { type: 'policy_decided', decision: 'allow', reason: 'a client tool: the client that declared it runs it' } });
          return;
        }
        if (!client) this.tools.decided(d.callId, verdict);
        this.deliver(turnId, 'policy', { type: 'tool', callId: d.callId, event: { type: 'policy_decided', decision: verdict.decision, reason: verdict.reason } });
        return;
      }
      case 'request_approval':
        // Surfaced through the pendingApprovals query and the KeelPendingApprovals search
        // attribute, both derived from the turn's state after every event. The files a
        // command runs are hashed now: the approval is bound to what they say while asked.
        this.tools.hashAtAsk(d.callId, d.name, d.input);
        return;
      case 'run_tool':
        this.tools.run(turnId, d.callId, d.activityId, d.name, d.input);
        return;
      case 'ask_human':
        this.host.asked(turnId, d.callId, d.question);
        return;
      case 'finish':
        this.host.finished(d.result);
        return;
      default: {
        const never: never = d;
        throw new Error(`unknown turn directive ${JSON.stringify(never)}`);
      }
    }
  }

  private track<T>(activityId: string, run: () => Promise<T>): Promise<T> {
    const scope = new CancellationScope();
    this.scopes.set(activityId, scope);
    this.inflight.add(activityId);
    const done = () => {
      if (this.scopes.get(activityId) === scope) this.scopes.delete(activityId);
      this.inflight.delete(activityId);
    };
    const promise = scope.run(run);
    promise.then(done, done);
    return promise;
  }

  /**
   * `repaired`: the call again after the conversation was rebuilt (conversation-repair.ts);
   * never repaired twice. `retry`: the call again after its store failed transiently, once
   * `delayMs` has passed (a durable timer an interrupt cancels); each try its own activity id.
   */
  private callModel(turnId: string, d: Extract<TurnDirective, { type: 'call_model' }>, repaired: RepairedCall | null = null, retry: { n: number; delayMs: number } | null = null): void {
    const { activityId } = d;
    const options = this.config.modelActivity ?? {};
    const { callModel } = proxyActivities<ModelActivities>({
      // The turn machine retries by the table in machines/model-retry.ts and counts each
      // attempt's usage; two tiers would multiply. Temporal retries only a lost attempt
      // (a dead worker: the activity marks every other failure non-retryable), once, on
      // the server — no workflow task, so failover stays fast — and the next attempt
      // reports what the lost one was billed for.
      ...modelActivityOptions(options),
      activityId: `${activityId}${repaired === null ? '' : '-repaired'}${retry === null ? '' : `-store-${retry.n}`}`,
    });
    const { head, append } = this.host.conversation.outgoing();
    const storeId = this.host.storeId?.();
    // Tool schemas are JSON Schema objects (`type: 'object'`), as listTools builds them.
    const tools = this.host.tools().map((t) => t.spec as unknown as NonNullable<ModelCallInput['tools']>[number]);
    const toolsRef = this.host.toolsRef();
    const client = (this.host.clientTools?.of(turnId) ?? []).map(modelToolOf) as unknown as NonNullable<ModelCallInput['tools']>;
    const source = `model call ${activityId}`;
    this.track(activityId, async () => {
      if (retry !== null) await sleep(retry.delayMs);
      // The tool definitions are stored again first (same content, same id) in case they were lost too.
      if (repaired !== null && toolsRef !== null) await repaired.restoreTools(storeId);
      return callModel({
        callId: activityId,
        model: this.config.model,
        serverRetries: 'timeouts_only',
        maxTokens: d.maxTokens ?? effectiveMaxTokens(this.config),
        ...(d.budget !== undefined ? { budget: d.budget } : {}),
        ...thinkingOf(this.config.thinking),
        ...(this.config.promptCaching === false ? { promptCaching: false } : {}),
        ...(this.config.promptCacheTtl !== undefined ? { promptCacheTtl: this.config.promptCacheTtl } : {}),
        ...(this.config.system !== undefined ? { system: this.config.system } : {}),
        ...(toolsRef !== null
          ? { toolsRef: { store: this.config.storeDir, id: toolsRef }, ...(client.length > 0 ? { tools: client } : {}) }
          : tools.length + client.length > 0
            ? { tools: [...tools, ...client] }
            : {}),
        conversation: {
          kind: 'ref',
          store: this.config.storeDir,
          ...(storeId !== undefined ? { storeId } : {}),
          head,
          append: append as Extract<ModelCallInput['conversation'], { kind: 'ref' }>['append'],
          ...(this.lastInput !== null && this.lastInput.head === head ? { lastInputTokens: this.lastInput.tokens } : {}),
          ...(this.config.compactAboveTokens !== undefined ? { compactAboveTokens: this.config.compactAboveTokens } : {}),
          ...(d.compact === true ? { compactNow: true } : {}),
        },
      });
    }).then(
      (result) => {
        this.host.queue.post(() => {
          this.infra.recovered();
          this.host.streamTail?.(result.streamTail);
          this.host.conversation.stored(result.conversationHead ?? head, append.length);
          const u = result.usage;
          this.lastInput = { head: result.conversationHead ?? head, tokens: u.input_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0) };
          const c = result.compaction;
          if (c) {
            const { fromMessages, toMessages, fromTokens, toTokens, summaryChars } = c;
            this.host.emit({ kind: 'conversation.compacted', turnId, fromMessages, toMessages, fromTokens, toTokens, summaryChars });
          }
        });
        this.deliver(turnId, source, modelResponse(result));
      },
      (error: unknown) => {
        // A cancelled call was cancelled by the turn (interrupt): it already moved on, having
        // counted what the stream showed then. The activity read on until the connection
        // closed: what it was billed for beyond that is the session's (runs recorded before
        // did not count it, and replay so).
        if (isCancellation(error)) {
          const counted = this.countedAtInterrupt.get(activityId);
          this.countedAtInterrupt.delete(activityId);
          const beyond = counted === undefined ? null : settledBeyond(error, counted);
          if (beyond !== null && this.host.settled !== undefined && patched(SETTLED_USAGE_PATCH)) this.host.settled(turnId, activityId, beyond);
          return;
        }
        // Repair, wait for the store, or fail: decided in machines/conversation-repair.ts.
        const decided = afterStoreFailure(callFailureOf(error), { repaired: repaired !== null, waitsEnabled: () => InfraWaiter.enabled() });
        switch (decided.type) {
          case 'repair':
            this.host.queue.post(() => this.repair(turnId, d, decided.error, error));
            return;
          case 'wait':
            this.host.queue.post(() => this.waitForStore(turnId, d, repaired, retry?.n ?? 0, decided, error));
            return;
          case 'fail':
            this.deliver(turnId, source, modelFailure(error));
            return;
          default:
            assertNever(decided);
        }
      },
    );
  }

  /**
   * The store could not be reached (a restarting database, a dropped connection): the call
   * is made again, on a durable timer, for as long as the infrastructure table's horizon,
   * while the turn stays where it was — nothing was appended, no tool ran, so the next try
   * goes on from the same point. Past the horizon the store's error ends the call.
   */
  private waitForStore(turnId: string, d: Extract<TurnDirective, { type: 'call_model' }>, repaired: RepairedCall | null, tries: number, failure: { store: string; message: string }, error: unknown): void {
    if (this.turnId !== turnId || this.state?.status !== 'calling_llm' || this.state.activityId !== d.activityId) return;
    const decision = this.infra.failed('conversation store', failure.store, failure.message);
    if (!decision.wait) {
      const failed = modelFailure(error);
      this.deliver(turnId, `model call ${d.activityId}`, { ...failed, message: `${failed.message} (${decision.reason})` });
      return;
    }
    this.callModel(turnId, d, repaired, { n: tries + 1, delayMs: decision.delayMs });
  }

  /**
   * The store lost or damaged a segment of this conversation: rebuild it from what the
   * workflow holds, say what could not be recovered, and call the model again with it (the
   * call stores it as a new chain). When nothing valid can be rebuilt, the store's error
   * ends the call as it would have.
   */
  private repair(turnId: string, d: Extract<TurnDirective, { type: 'call_model' }>, message: string, error: unknown): void {
    if (this.turnId !== turnId || this.state?.status !== 'calling_llm' || this.state.activityId !== d.activityId) return;
    let rebuilt: ReturnType<ConversationLog['repair']>;
    try {
      rebuilt = this.host.conversation.repair();
    } catch (problem) {
      const failure = modelFailure(error);
      this.deliver(turnId, `model call ${d.activityId}`, { ...failure, message: `${failure.message}; ${problem instanceof Error ? problem.message : String(problem)}` });
      return;
    }
    this.host.emit({
      kind: 'conversation.repaired',
      turnId,
      error: message,
      lostTurns: rebuilt.lostTurns,
      lostMessages: rebuilt.lostMessages,
      lostUserMessages: rebuilt.lostUserMessages,
      keptMessages: rebuilt.keptMessages,
    });
    const specs = this.host.tools().map((t) => t.spec);
    this.callModel(turnId, d, {
      restoreTools: async (storeId) => {
        const { storeSegment } = proxyActivities<StoreActivities>({ startToCloseTimeout: '1 minute', retry: { maximumAttempts: 3 } });
        // A goal's agents hold only the tools' names (their definitions are the goal's): then nothing to restore here.
        // If they cannot be stored, the call itself says why.
        if (specs.some((s) => s.description !== '')) await storeSegment({ store: this.config.storeDir, parent: null, items: specs, ...(storeId !== undefined ? { storeId } : {}) }).catch(() => null);
      },
    });
  }
}

interface RepairedCall {
  restoreTools(storeId: string | undefined): Promise<void>;
}
