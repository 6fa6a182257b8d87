// Runs one turn machine at a time: applies events to it and executes its directives —
// model calls and tools as activities in cancellation scopes, policy checks with the pure
// policy, timers, conversation appends. It decides nothing itself. The session workflow
// drives it, and the goal workflow's child agents can drive it the same way.
import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  proxyActivities,
  TimeoutFailure,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { ModelActivities, ModelCallInput, ModelCallResult } from '../activities/llm';
import { MODEL_ACTIVITY_OPTIONS } from '../activities/llm-options';
import type { McpBridge } from '../activities/mcp/index';
import type { ToolActivities, ToolActivityOptions, ToolResult } from '../activities/tools/index';
import {
  createTurn,
  pendingApprovals,
  turnMachine,
  type ContentBlock,
  type Json,
  type LogEvent,
  type TransitionError,
  type TransitionResult,
  type TurnDirective,
  type TurnEvent,
  type TurnLimits,
  type TurnResult,
  type TurnState,
} from '../machines/index';
import { type CommandSandbox, evaluatePolicy, sandboxFor, toolKind, type PolicyConfig, type SessionApproval } from '../machines/policy';
import { interruptedToolResult } from '../machines/tool-result';
import type { CompactedEvent } from './definitions';
import type { ConversationLog, SerialQueue, Timers } from './runtime';

type McpActivities = McpBridge['activities'];

/** A tool the model may call, as listTools / listMcpTools describe it. */
export interface ToolEntry {
  spec: { name: string; description: string; input_schema: Record<string, unknown> };
  readOnly: boolean;
  /** Absent for ask_user, which a person answers. */
  activityOptions?: ToolActivityOptions | undefined;
  mcp?: boolean;
}

export interface TurnRunnerConfig {
  workspace: string;
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
}

export interface TurnHost {
  queue: SerialQueue;
  timers: Timers;
  conversation: ConversationLog;
  now(): number;
  tools(): readonly ToolEntry[];
  /** The tool definitions' id in the conversation store, when they are stored there (sent by reference). */
  toolsRef(): string | null;
  policy(): { policy: PolicyConfig; approvals: readonly SessionApproval[]; headless: boolean };
  emit(event: LogEvent | CompactedEvent): void;
  /** An event the turn refused (a late activity result, a stale timer): recorded, not lost. */
  rejected(source: string, error: TransitionError): void;
  /** Text the model had streamed for a call so far (kept when it is interrupted). */
  streamedText(activityId: string): string;
  /** The turn's `finish` and `ask_human` directives, for the session (or the parent goal). */
  finished(result: TurnResult): void;
  asked(turnId: string, callId: string, question: string): void;
}

const ASK_TOOL = 'ask_user';

export class TurnRunner {
  state: TurnState | null = null;
  /** In-flight activities by the machines' activity ids. */
  private readonly scopes = new Map<string, CancellationScope>();
  private readonly inflight = new Set<string>();

  constructor(
    private readonly config: TurnRunnerConfig,
    private readonly host: TurnHost,
  ) {}

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
    this.state = createTurn({
      turnId,
      limits,
      readOnlyTools: tools.filter((t) => t.readOnly).map((t) => t.spec.name),
      askTool: tools.some((t) => t.spec.name === ASK_TOOL) ? ASK_TOOL : null,
      approvalTimeoutMs: this.config.approvalTimeoutMs,
      maxParallelTools: this.config.maxParallelTools,
      ...(this.config.retryBackoffMs ? { retryBackoffMs: this.config.retryBackoffMs } : {}),
    });
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
    const result = turnMachine.transition(state, this.complete(event));
    if (!result.ok) return result;
    this.state = result.state;
    for (const directive of result.directives) this.execute(state.config.turnId, directive);
    return result;
  }

  /** An interrupt during a model call carries what the model had said so far. */
  private complete(event: TurnEvent): TurnEvent {
    if (event.type === 'interrupt' && this.state?.status === 'calling_llm' && event.partialText === undefined) {
      return { ...event, partialText: this.host.streamedText(this.state.activityId) };
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
      case 'call_model':
        this.callModel(turnId, d.activityId);
        return;
      case 'check_policy': {
        const { policy, approvals, headless } = this.host.policy();
        const verdict = evaluatePolicy(policy, { tool: d.name, input: d.input, workspace: this.config.workspace }, { headless, approvals });
        this.deliver(turnId, 'policy', { type: 'tool', callId: d.callId, event: { type: 'policy_decided', decision: verdict.decision, reason: verdict.reason } });
        return;
      }
      case 'request_approval':
        // Surfaced through the pendingApprovals query and the KeelPendingApprovals search
        // attribute, both derived from the turn's state after every event.
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

  private callModel(turnId: string, activityId: string): void {
    const options = this.config.modelActivity ?? {};
    const { callModel } = proxyActivities<ModelActivities>({
      ...MODEL_ACTIVITY_OPTIONS,
      ...options,
      retry: { ...MODEL_ACTIVITY_OPTIONS.retry, ...options.retry },
      activityId,
    });
    const { head, append } = this.host.conversation.outgoing();
    // Tool schemas are JSON Schema objects (`type: 'object'`), as listTools builds them.
    const tools = this.host.tools().map((t) => t.spec as unknown as NonNullable<ModelCallInput['tools']>[number]);
    const toolsRef = this.host.toolsRef();
    const source = `model call ${activityId}`;
    this.track(activityId, () =>
      callModel({
        callId: activityId,
        model: this.config.model,
        maxTokens: this.config.maxTokens,
        ...(this.config.system !== undefined ? { system: this.config.system } : {}),
        ...(toolsRef !== null ? { toolsRef: { store: this.config.storeDir, id: toolsRef } } : tools.length > 0 ? { tools } : {}),
        conversation: {
          kind: 'ref',
          store: this.config.storeDir,
          head,
          append,
          ...(this.config.compactAboveTokens !== undefined ? { compactAboveTokens: this.config.compactAboveTokens } : {}),
        },
      }),
    ).then(
      (result) => {
        this.host.queue.post(() => {
          this.host.conversation.stored(result.conversationHead ?? head, append.length);
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
        this.deliver(turnId, source, modelFailure(error));
      },
    );
  }

  /** The sandbox a command runs in, from the same policy that allowed it. */
  private sandboxOf(name: string, input: Json): { sandbox?: CommandSandbox } {
    if (toolKind(name) !== 'execute') return {};
    return { sandbox: sandboxFor(this.host.policy().policy, { tool: name, input }) };
  }

  private runTool(turnId: string, callId: string, activityId: string, name: string, input: Json): void {
    const source = `tool ${name} (${callId})`;
    const tool = this.host.tools().find((t) => t.spec.name === name);
    if (tool?.activityOptions === undefined) {
      this.deliver(turnId, source, { type: 'tool', callId, event: { type: 'failed', error: `Unknown tool ${name}. Use one of the tools offered.` } });
      return;
    }
    const options: ActivityOptions = {
      ...tool.activityOptions,
      activityId,
      // The result of a cancelled command must mean its process is gone.
      cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    };
    const run = tool.mcp
      ? () => proxyActivities<McpActivities>(options).callMcpTool({ tool: name, input, workspace: this.config.workspace })
      : () => proxyActivities<ToolActivities>(options).runTool({ workspace: this.config.workspace, tool: name, input, ...this.sandboxOf(name, input) });
    this.track(activityId, run).then(
      (result: ToolResult) =>
        this.deliver(turnId, source, {
          type: 'tool',
          callId,
          event: result.timed_out
            ? { type: 'timed_out', message: result.content }
            : result.is_error
              ? { type: 'failed', error: result.content }
              : { type: 'succeeded', output: result.content },
        }),
      (error: unknown) => {
        if (isCancellation(error)) return;
        this.deliver(turnId, source, { type: 'tool', callId, event: toolFailure(name, error) });
      },
    );
  }
}

function toContent(blocks: ModelCallResult['message']['content']): ContentBlock[] {
  const out: ContentBlock[] = [];
  // Server-side tool blocks are never requested by Keel: only these four can arrive.
  for (const block of blocks) {
    if (block.type === 'text') out.push({ type: 'text', text: block.text });
    else if (block.type === 'tool_use') out.push({ type: 'tool_use', id: block.id, name: block.name, input: block.input as Json });
    else if (block.type === 'thinking') out.push({ type: 'thinking', thinking: block.thinking, signature: block.signature });
    else if (block.type === 'redacted_thinking') out.push({ type: 'redacted_thinking', data: block.data });
  }
  return out;
}

function modelResponse(result: ModelCallResult): TurnEvent {
  const u = result.usage;
  // A compaction's summary call is part of this step's spending.
  const summary = result.compaction?.usage ?? { input_tokens: 0, output_tokens: 0 };
  return {
    type: 'model_response',
    content: toContent(result.message.content),
    stopReason: result.stopReason,
    usage: {
      inputTokens: u.input_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0) + summary.input_tokens,
      outputTokens: u.output_tokens + summary.output_tokens,
      costUsd: result.cost?.total ?? null,
    },
  };
}

function modelFailure(error: unknown): TurnEvent {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  if (cause instanceof ApplicationFailure) {
    const details = cause.details?.[0] as { retryAfterMs?: number | null } | undefined;
    const retryAfterMs = details?.retryAfterMs;
    return {
      type: 'model_failed',
      message: `${cause.type ?? 'ModelError'}: ${cause.message}`,
      retryable: cause.nonRetryable !== true,
      ...(typeof retryAfterMs === 'number' && retryAfterMs >= 0 ? { retryAfterMs: Math.round(retryAfterMs) } : {}),
    };
  }
  if (cause instanceof TimeoutFailure) return { type: 'model_failed', message: `the model call timed out (${cause.timeoutType})`, retryable: true };
  return { type: 'model_failed', message: cause instanceof Error ? cause.message : String(cause), retryable: true };
}

function toolFailure(name: string, error: unknown): Extract<TurnEvent, { type: 'tool' }>['event'] {
  const cause = error instanceof ActivityFailure ? error.cause : error;
  if (cause instanceof TimeoutFailure) {
    if (cause.timeoutType === 'HEARTBEAT') return { type: 'failed', error: interruptedToolResult(name, 'worker_lost').content };
    return { type: 'timed_out', message: interruptedToolResult(name, 'timed_out').content };
  }
  const detail = cause instanceof Error ? cause.message : String(cause);
  return { type: 'failed', error: interruptedToolResult(name, 'failed', detail).content };
}
