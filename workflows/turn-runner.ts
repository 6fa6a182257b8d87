// Runs one turn machine at a time: applies events to it and executes its directives —
// model calls and tools as activities in cancellation scopes, policy checks with the pure
// policy, timers, conversation appends. It decides nothing itself. The session workflow
// drives it, and the goal workflow's child agents can drive it the same way.
import { ActivityCancellationType, CancellationScope, isCancellation, patched, proxyActivities, type ActivityOptions } from '@temporalio/workflow';
import type { ModelActivities, ModelCallInput } from '../activities/llm';
import { modelActivityOptions } from '../activities/llm-options';
import type { McpBridge } from '../activities/mcp/index';
import type { SetupTool } from '../activities/setup';
import type { ToolActivities, ToolResult } from '../activities/tools/index';
import type { CallUsage, Json, LogEvent, TransitionError, TransitionResult, TurnLimits } from '../machines/index';
import { createTurn, pendingApprovals, turnMachine, type TurnDirective, type TurnEvent, type TurnResult, type TurnState } from '../machines/turn';
import { observe, type Observer } from '../machines/core';
import { maxOutputTokens } from '../machines/model-limits';
import { type CommandSandbox, describeApproval, evaluatePolicy, sandboxFor, toolKind, type PolicyConfig, type SessionApproval } from '../machines/policy';
import { bindScripts, scriptWordsOf, type ScriptHashes } from '../machines/script-binding';
import type { ToolFacts } from '../machines/tool-result';
import { FINISH_TASK } from '../machines/task-outcome';
import { interruptedToolResult, parseToolFacts } from '../machines/tool-result';
import type { StoreActivities } from '../activities/conversation-store';
import type { CompactedEvent, RepairedEvent } from './definitions';
import type { ConversationCheckpoint, ConversationLog, SerialQueue, Timers } from './runtime';
import { modelToolOf, type ClientTools } from './client-tools';
import { modelFailure, modelResponse, repairableStoreFailure, stoppedByShutdown, toolFailure, toolResultEvent } from './turn-results';
import { routed, workspaceHostGone, type WorkspaceRoute } from './workspace-host';

type McpActivities = McpBridge['activities'];

/** A tool the model may call, as listTools / listMcpTools describe it. */
/** A tool as the setup activity lists it (activities/setup.ts). */
export type ToolEntry = SetupTool;

export interface TurnRunnerConfig {
  workspace: string;
  /** A workspace on one host's disk: its tool calls go to that host's queue (workflows/workspace-host.ts). */
  workspaceRoute?: WorkspaceRoute | null | undefined;
  storeDir: string;
  model: string;
  maxTokens: number;
  system?: string | undefined;
  approvalTimeoutMs: number | null;
  maxParallelTools: number;
  retryBackoffMs?: number[] | undefined;
  /** Overrides of MODEL_ACTIVITY_OPTIONS (tests shorten retries). */
  modelActivity?: Partial<ActivityOptions> | undefined;
  /** Compact the conversation (summary of older turns) above this many estimated tokens. */
  compactAboveTokens?: number | undefined;
  /**
   * Extended thinking: the model may think up to `budgetTokens` before it answers (on top
   * of maxTokens), and between tool calls with `interleaved`; or `adaptive`: the model
   * decides when and how much to think (and thinks between tool calls by itself).
   */
  thinking?: { budgetTokens: number; interleaved?: boolean | undefined } | { adaptive: true } | undefined;
  /** Prompt caching (default on; activities/llm-cache.ts) and its TTL: `1h` for sessions that wait on people. */
  promptCaching?: boolean | undefined;
  promptCacheTtl?: '5m' | '1h' | undefined;
  /** The largest output limit a call cut inside a tool_use may be retried with (default: the model's own maximum). */
  maxTokensCeiling?: number | undefined;
}

/** What a call sends as max_tokens: thinking tokens count towards it, so they are added. */
export function effectiveMaxTokens(config: Pick<TurnRunnerConfig, 'maxTokens' | 'thinking'>): number {
  return config.maxTokens + (config.thinking !== undefined && 'budgetTokens' in config.thinking ? config.thinking.budgetTokens : 0);
}

/** The request's thinking fields for the configured mode. */
function thinkingOf(thinking: TurnRunnerConfig['thinking']): Pick<ModelCallInput, 'thinking' | 'interleavedThinking'> {
  if (thinking === undefined) return {};
  if ('adaptive' in thinking) return { thinking: { type: 'adaptive' } };
  return { thinking: { type: 'enabled', budget_tokens: thinking.budgetTokens }, ...(thinking.interleaved === true ? { interleavedThinking: true } : {}) };
}

/** The one larger limit a call cut inside a tool_use gets: twice as much, within the ceiling; null when there is no room. */
export function raisedMaxTokens(config: Pick<TurnRunnerConfig, 'model' | 'maxTokens' | 'thinking' | 'maxTokensCeiling'>): number | null {
  const now = effectiveMaxTokens(config);
  // Opus 4 / 4.1 take 32 000 at most: asking for more is a 400, not a longer answer.
  const raised = Math.min(now * 2, config.maxTokensCeiling ?? maxOutputTokens(config.model));
  return raised > now ? raised : null;
}

export interface TurnHost {
  queue: SerialQueue;
  timers: Timers;
  conversation: ConversationLog;
  now(): number;
  tools(): readonly ToolEntry[];
  /** The tool definitions' id in the conversation store, when they are stored there (sent by reference). */
  toolsRef(): string | null;
  /** The identity of the store the session started on (checked by every model call); absent for older runs. */
  storeId?(): string | undefined;
  policy(): { policy: PolicyConfig; approvals: readonly SessionApproval[]; headless: boolean };
  /** Changes the remembered approvals: binds one to the files its calls ran, or drops one whose file changed. */
  updateApprovals?(update: (approvals: readonly SessionApproval[]) => SessionApproval[]): void;
  emit(event: LogEvent | CompactedEvent | RepairedEvent): void;
  /** An event the turn refused (a late activity result, a stale timer): recorded, not lost. */
  rejected(source: string, error: TransitionError): void;
  /** Text the model had streamed for a call so far (kept when it is interrupted). */
  streamedText(activityId: string): string;
  /** What a call had been billed for so far, from its stream (counted when it is interrupted); null when unknown. */
  streamedUsage?(activityId: string): CallUsage | null;
  /** The turn's `finish` and `ask_human` directives, for the session (or the parent goal). */
  finished(result: TurnResult): void;
  asked(turnId: string, callId: string, question: string): void;
  /** Sees every transition of the turn machine (the host's counters). */
  observer?: Observer<TurnState, TurnEvent, TurnDirective>;
  /** Tools the turn's client declared and runs itself (workflows/client-tools.ts); sessions only. */
  clientTools?: ClientTools;
}

const ASK_TOOL = 'ask_user';

export class TurnRunner {
  state: TurnState | null = null;
  /** In-flight activities by the machines' activity ids. */
  private readonly scopes = new Map<string, CancellationScope>();
  private readonly inflight = new Set<string>();
  /** The remembered approval (by its label) each call runs under: it binds the files they run. */
  private readonly approvalOf = new Map<string, string>();
  /** The files each command waiting for approval runs, hashed when it was asked. */
  private readonly askedScripts = new Map<string, ScriptHashes>();
  private readonly pendingHashes = new Map<string, Promise<undefined>>();
  /** The input tokens the last response reported, for the stored conversation it was measured on (proactive compaction). */
  private lastInput: { head: string | null; tokens: number } | null = null;
  /** The conversation before this turn's message: a refused turn goes back to it. */
  private beforeTurn: ConversationCheckpoint | null = null;

  private readonly transition: (state: TurnState, event: TurnEvent) => TransitionResult<TurnState, TurnDirective>;

  constructor(
    private readonly config: TurnRunnerConfig,
    private readonly host: TurnHost,
  ) {
    this.transition = host.observer ? observe(turnMachine, host.observer) : (state, event) => turnMachine.transition(state, event);
  }

  get turnId(): string | null {
    return this.state?.config.turnId ?? null;
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
        if (this.host.clientTools?.has(turnId, d.name)) {
          this.deliver(turnId, 'policy', { type: 'tool', callId: d.callId, event: { type: 'policy_decided', decision: 'allow', reason: 'a client tool: the client that declared it runs it' } });
          return;
        }
        const { policy, approvals, headless } = this.host.policy();
        const verdict = evaluatePolicy(policy, { tool: d.name, input: d.input, workspace: this.config.workspace }, { headless, approvals });
        if (verdict.decision === 'allow' && verdict.matchedRule?.startsWith(SESSION_RULE)) this.approvalOf.set(d.callId, verdict.matchedRule.slice(SESSION_RULE.length));
        this.deliver(turnId, 'policy', { type: 'tool', callId: d.callId, event: { type: 'policy_decided', decision: verdict.decision, reason: verdict.reason } });
        return;
      }
      case 'request_approval':
        // Surfaced through the pendingApprovals query and the KeelPendingApprovals search
        // attribute, both derived from the turn's state after every event. The files a
        // command runs are hashed now: the approval is bound to what they say while asked.
        this.hashAtAsk(d.callId, d.name, d.input);
        return;
      case 'run_tool':
        this.runTool(turnId, d.callId, d.activityId, d.name, d.input);
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

  /** `repaired`: the call again after the conversation was rebuilt (conversation-repair.ts); never repaired twice. */
  private callModel(turnId: string, d: Extract<TurnDirective, { type: 'call_model' }>, repaired: RepairedCall | null = null): void {
    const { activityId } = d;
    const options = this.config.modelActivity ?? {};
    const { callModel } = proxyActivities<ModelActivities>({
      // The turn machine retries by the table in machines/model-retry.ts and counts each
      // attempt's usage; two tiers would multiply. Temporal retries only a lost attempt
      // (a dead worker: the activity marks every other failure non-retryable), once, on
      // the server — no workflow task, so failover stays fast — and the next attempt
      // reports what the lost one was billed for.
      ...modelActivityOptions(options),
      activityId: repaired === null ? activityId : `${activityId}-repaired`,
    });
    const { head, append } = this.host.conversation.outgoing();
    const storeId = this.host.storeId?.();
    // Tool schemas are JSON Schema objects (`type: 'object'`), as listTools builds them.
    const tools = this.host.tools().map((t) => t.spec as unknown as NonNullable<ModelCallInput['tools']>[number]);
    const toolsRef = this.host.toolsRef();
    const client = (this.host.clientTools?.of(turnId) ?? []).map(modelToolOf) as unknown as NonNullable<ModelCallInput['tools']>;
    const source = `model call ${activityId}`;
    this.track(activityId, async () => {
      // The tool definitions are stored again first (same content, same id) in case they were lost too.
      if (repaired !== null && toolsRef !== null) await repaired.restoreTools(storeId);
      return callModel({
        callId: activityId,
        model: this.config.model,
        serverRetries: 'timeouts_only',
        maxTokens: d.maxTokens ?? effectiveMaxTokens(this.config),
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
        // A cancelled call was cancelled by the turn (interrupt): it already moved on.
        if (isCancellation(error)) return;
        if (repaired === null && repairableStoreFailure(error) !== null) {
          this.host.queue.post(() => this.repair(turnId, d, error));
          return;
        }
        this.deliver(turnId, source, modelFailure(error));
      },
    );
  }

  /**
   * The store lost or damaged a segment of this conversation: rebuild it from what the
   * workflow holds, say what could not be recovered, and call the model again with it (the
   * call stores it as a new chain). When nothing valid can be rebuilt, the store's error
   * ends the call as it would have.
   */
  private repair(turnId: string, d: Extract<TurnDirective, { type: 'call_model' }>, error: unknown): void {
    if (this.turnId !== turnId || this.state?.status !== 'calling_llm' || this.state.activityId !== d.activityId) return;
    const message = repairableStoreFailure(error) ?? 'conversation store error';
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

  /** The sandbox a command runs in, from the same policy that allowed it. */
  private sandboxOf(name: string, input: Json): { sandbox?: CommandSandbox } {
    if (toolKind(name) !== 'execute') return {};
    return { sandbox: sandboxFor(this.host.policy().policy, { tool: name, input }) };
  }

  /** A human approved `callId` for the rest of the session, remembered as `label`: its run binds the files it runs. */
  approvedForSession(callId: string, label: string): void {
    this.approvalOf.set(callId, label);
  }

  /** The file hashes the approval a call runs under is bound to, for the activity to check. */
  private boundScriptsOf(callId: string): { scripts?: ScriptHashes } {
    const label = this.approvalOf.get(callId);
    const approval = label === undefined ? undefined : this.host.policy().approvals.find((a) => describeApproval(a) === label);
    const asked = this.askedScripts.get(callId);
    this.askedScripts.delete(callId);
    const scripts = approval?.scripts !== undefined ? bindScripts(approval.scripts, asked ?? {}) : asked;
    return scripts !== undefined && Object.keys(scripts).length > 0 ? { scripts } : {};
  }

  /**
   * Hashes the workspace files a command waiting for approval runs (runs before this patch
   * did not). An approval given before the hashes arrive binds them all the same: they are
   * what the files said when the human was asked.
   */
  private hashAtAsk(callId: string, name: string, input: Json): void {
    if (toolKind(name) !== 'execute' || scriptWordsOf(typeof input === 'object' && input !== null && !Array.isArray(input) ? input.command : undefined).length === 0 || !patched(SCRIPTS_AT_ASK)) return;
    const hashing = proxyActivities<ToolActivities>(HASH_ACTIVITY_OPTIONS)
      .hashCommandScripts({ workspace: this.config.workspace, input })
      .then(
        (hashes) => (this.askedScripts.set(callId, hashes), undefined),
        () => undefined,
      );
    this.pendingHashes.set(callId, hashing);
  }

  /**
   * After a call ran under a remembered approval: the files it ran bind the approval (what
   * was there first stays bound), and a refusal because one changed drops the approval, so
   * the same call asks a human again.
   */
  private settleApproval(callId: string, facts: ToolFacts | undefined): void {
    const label = this.approvalOf.get(callId);
    this.approvalOf.delete(callId);
    if (label === undefined || this.host.updateApprovals === undefined) return;
    const same = (a: SessionApproval) => describeApproval(a) === label;
    if (facts?.kind === 'refused' && facts.reason === 'script_changed') this.host.updateApprovals((list) => list.filter((a) => !same(a)));
    else if (facts?.kind === 'command' && facts.scripts !== undefined) {
      const ran = facts.scripts;
      this.host.updateApprovals((list) => list.map((a) => (same(a) ? { ...a, scripts: bindScripts(a.scripts, ran) } : a)));
    }
  }

  private runTool(turnId: string, callId: string, activityId: string, name: string, input: Json): void {
    const source = `tool ${name} (${callId})`;
    if (this.host.clientTools?.has(turnId, name)) {
      this.host.emit({ kind: 'tool.client_requested', turnId, callId, toolName: name, arguments: input });
      this.host.clientTools.run({ callId, name, input }, (event) => this.deliver(turnId, source, { type: 'tool', callId, event }));
      return;
    }
    const tool = this.host.tools().find((t) => t.spec.name === name);
    if (tool?.activityOptions === undefined) {
      this.deliver(turnId, source, { type: 'tool', callId, event: { type: 'failed', error: `Unknown tool ${name}. Use one of the tools offered.` } });
      return;
    }
    // A read-only tool stopped by a worker's shutdown runs again (on another worker) under a
    // new activity id; the call keeps its id, so an interrupt still finds and cancels it.
    const run = (rerun: number) => {
      const options: ActivityOptions = {
        ...tool.activityOptions,
        ...routed(this.config.workspaceRoute ?? null),
        activityId: rerun === 0 ? activityId : `${activityId}-rerun-${rerun}`,
        // The result of a cancelled command must mean its process is gone.
        cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
      };
      const start = () =>
        tool.mcp
          ? proxyActivities<McpActivities>(options).callMcpTool({ tool: name, input, workspace: this.config.workspace, callId })
          : proxyActivities<ToolActivities>(options).runTool({ workspace: this.config.workspace, tool: name, input, callId, ...this.sandboxOf(name, input), ...this.boundScriptsOf(callId) });
      // An approval given before its files' hashes arrived waits for them: the run is checked against them all the same.
      const hashing = this.pendingHashes.get(callId);
      this.pendingHashes.delete(callId);
      return hashing === undefined ? start() : hashing.then(start);
    };
    const attempt = (rerun: number): void => {
      this.track(activityId, () => run(rerun)).then(
        (result: ToolResult) => {
          // The facts come from an activity: checked, and dropped when they do not parse.
          const facts = parseToolFacts(result.facts);
          this.settleApproval(callId, facts);
          // A sandbox limit ends the call as `limit`, not as a plain error (runs from before
          // this patch recorded it as failed, and replay keeps them so).
          const limit = facts?.kind === 'command' && facts.limit !== undefined && patched(LIMIT_STATUS);
          this.deliver(turnId, source, { type: 'tool', callId, event: toolResultEvent(result, facts, limit) });
        },
        (error: unknown) => {
          if (isCancellation(error)) return;
          // The workspace's host is gone: the call never started anywhere, and says so.
          const gone = workspaceHostGone(error, this.config.workspaceRoute ?? null);
          if (gone !== null) {
            this.deliver(turnId, source, { type: 'tool', callId, event: { type: 'failed', error: gone } });
            return;
          }
          if (stoppedByShutdown(error)) {
            // A read-only tool runs again on another worker. Anything else may have done part
            // of its work: it ends as worker_lost, like a crash, and the model decides (runs
            // before this patch started every call again, commands included).
            if ((tool.readOnly || !patched(SHUTDOWN_IS_WORKER_LOST)) && rerun < MAX_SHUTDOWN_RERUNS) {
              attempt(rerun + 1);
              return;
            }
            if (!tool.readOnly) {
              this.deliver(turnId, source, { type: 'tool', callId, event: { type: 'failed', error: interruptedToolResult(name, 'worker_lost', 'its worker shut down').content } });
              return;
            }
          }
          this.deliver(turnId, source, { type: 'tool', callId, event: toolFailure(name, error) });
        },
      );
    };
    attempt(0);
  }
}

interface RepairedCall {
  restoreTools(storeId: string | undefined): Promise<void>;
}

/** A tool that is not read-only and was cut by a worker's shutdown ends as worker_lost instead of running again. */
const SHUTDOWN_IS_WORKER_LOST = 'shutdown-tool-is-worker-lost';
/** How the policy names a remembered approval that allowed a call (machines/policy.ts). */
const SESSION_RULE = 'session: ';
/** Commands waiting for approval have the files they run hashed (runs before it: not). */
const SCRIPTS_AT_ASK = 'scripts-hashed-at-ask';
const HASH_ACTIVITY_OPTIONS: ActivityOptions = { startToCloseTimeout: '1 minute', retry: { maximumAttempts: 3 } };
/** A command stopped at a sandbox limit ends as `limit` (runs before it: `failed`). */
const LIMIT_STATUS = 'tool-limit-status';

/** Deploys in a row could stop the same read-only call again; after this many it fails like any error. */
const MAX_SHUTDOWN_RERUNS = 3;
