// What a session is started with (its options), their one resolver (every default filled in
// once, at the start of a run), what it returns, and what one run hands the next through
// continue-as-new.
import type { ActivityOptions } from '@temporalio/workflow';
import type { BudgetLimits, SessionDirective, SessionStats } from '../machines/index';
import { applyPatch, NO_LIMITS } from '../machines/budget';
import { DEFAULT_MAX_CONSECUTIVE_ERRORS } from '../machines/session';
import { DEFAULT_MAX_PARALLEL_TOOLS, DEFAULT_MAX_TOKENS, DEFAULT_MODEL, defaultStoreDir } from './defaults';
import { DEFAULT_WORKSPACE_HOST_WAIT_MS } from './workspace-host';
import type { PolicyConfig, PolicyConfigInput, PolicyOrigin, SessionApproval } from '../machines/policy';
import type { FinishedTurn } from './finished-turns';
import type { HostCarry } from './host';
import type { ClientToolsCarry } from './client-tools';
import type { ConversationSnapshot } from './runtime';
import type { ToolEntry } from './turn-runner';

export interface SessionOptions {
  /** Absolute path of the directory the tools work in. */
  workspace: string;
  /**
   * The host whose disk holds the workspace (not shared): its setup, tools and MCP calls run
   * on the worker started there with KEEL_WORKSPACE_HOST=<name> (workflows/workspace-host.ts).
   * Unset: any worker (a shared workspace). The client sets it from its own KEEL_WORKSPACE_HOST.
   */
  workspaceHost?: string;
  /** How long a call waits for the workspace host before it fails as "not polling" (default 60 s). */
  workspaceHostWaitMs?: number;
  /** The model of every turn (default claude-sonnet-4-6, DEFAULT_MODEL). */
  model?: string;
  /** A call's output limit (default 4096, DEFAULT_MAX_TOKENS); a truncated answer may raise it (workflows/turn-config.ts). */
  maxTokens?: number;
  system?: string;
  /** Over the workspace's .keel/policy.json: mode (read-only | ask | auto-edit | full-auto), allow/ask/deny rules. */
  policy?: PolicyConfigInput;
  /** No human will answer: `ask` becomes the policy's headless choice (default false). */
  headless?: boolean;
  /** The session's budget; a limit not named is none (default: no limits). */
  limits?: Partial<BudgetLimits>;
  /** Failed turns in a row before the session stops (default 3, DEFAULT_MAX_CONSECUTIVE_ERRORS). */
  maxConsecutiveErrors?: number;
  /** How long a tool call waits for approval (default null: forever). */
  approvalTimeoutMs?: number | null;
  /** How long an idle session waits for a message before it closes (default null: forever). */
  idleTimeoutMs?: number | null;
  /** Read-only tool calls of one step run side by side up to this many (default 4). */
  maxParallelTools?: number;
  /** Shorter waits between a turn's model retries than the retry table's (tests): it can lower the retries, never raise them. Absent: the table's turn rows (machines/model-retry.ts). */
  retryBackoffMs?: number[];
  /** Offer the tools of the worker's MCP servers (KEEL_MCP_CONFIG; default false). */
  mcp?: boolean;
  /** Conversation store directory; default `<workspace>/.keel/store` (the worker's KEEL_STORE_DIR wins). */
  storeDir?: string;
  /** Continue as new after this many turns in one run (default null: only when suggested). */
  continueAsNewAfterTurns?: number | null;
  /** Continue as new when the server suggests it (history size or length); default true. */
  continueAsNewWhenSuggested?: boolean;
  /** Overrides of the model activity's options (tests shorten retries). */
  modelActivity?: Partial<ActivityOptions>;
  /**
   * Summarize older turns when the conversation exceeds this many tokens, measured by the
   * last response's input_tokens; default 80 % of the model's context window (applied by the
   * model activity, which knows the window).
   */
  compactAboveTokens?: number;
  /**
   * Extended thinking: up to `budgetTokens` of thinking per call, on top of maxTokens
   * (`interleaved`: between tool calls too); or `{ adaptive: true }`: the model decides.
   */
  thinking?: { budgetTokens: number; interleaved?: boolean } | { adaptive: true };
  /** Prompt caching (default true, applied by the model activity: activities/llm-cache.ts). */
  promptCaching?: boolean;
  /** `1h` keeps the cache across a wait on people longer than 5 minutes (writes cost 2× input instead of 1.25×); absent: the API's 5 minutes. */
  promptCacheTtl?: '5m' | '1h';
  /** Set by Keel's clients when they hold the encryption keys: `resume`, `stop`, `reset`,
   *  `restart` and `approvePlan` must carry their (empty, encrypted) argument (default false). */
  authenticatedControls?: boolean;
}

/** The options the resolver fills in: each has a default, defined once (workflows/defaults.ts, the machines' constants). */
type SessionDefaulted =
  | 'workspaceHostWaitMs'
  | 'model'
  | 'maxTokens'
  | 'headless'
  | 'limits'
  | 'maxConsecutiveErrors'
  | 'approvalTimeoutMs'
  | 'idleTimeoutMs'
  | 'maxParallelTools'
  | 'mcp'
  | 'storeDir'
  | 'continueAsNewAfterTurns'
  | 'continueAsNewWhenSuggested'
  | 'authenticatedControls';

/**
 * A session's options with every default filled in: what a run uses and what it hands the
 * next run through continue-as-new. Still optional: what has no default (workspaceHost,
 * system, policy — the workspace's file decides —, retryBackoffMs, modelActivity, thinking)
 * and what the model activity defaults, knowing the model (compactAboveTokens, promptCaching,
 * promptCacheTtl), so the activity's input stays as it was.
 */
export type ResolvedSessionOptions = Omit<SessionOptions, SessionDefaulted> & Required<Pick<SessionOptions, Exclude<SessionDefaulted, 'limits'>>> & { limits: BudgetLimits };

/**
 * The one place a session's defaults are applied. Pure, and idempotent: a run resolves its
 * input once, whether a client started it (options as given) or an earlier run continued as
 * new (options already resolved), so a default changed by a later deployment does not change
 * a running session. The worker's KEEL_STORE_DIR still wins over `storeDir` (the store
 * activities read it: activities/conversation-store.ts).
 */
export function resolveSessionOptions(options: SessionOptions): ResolvedSessionOptions {
  return {
    ...options,
    workspaceHostWaitMs: options.workspaceHostWaitMs ?? DEFAULT_WORKSPACE_HOST_WAIT_MS,
    model: options.model ?? DEFAULT_MODEL,
    maxTokens: options.maxTokens ?? DEFAULT_MAX_TOKENS,
    headless: options.headless ?? false,
    limits: applyPatch(NO_LIMITS, options.limits ?? {}),
    maxConsecutiveErrors: options.maxConsecutiveErrors ?? DEFAULT_MAX_CONSECUTIVE_ERRORS,
    approvalTimeoutMs: options.approvalTimeoutMs ?? null,
    idleTimeoutMs: options.idleTimeoutMs ?? null,
    maxParallelTools: options.maxParallelTools ?? DEFAULT_MAX_PARALLEL_TOOLS,
    mcp: options.mcp ?? false,
    storeDir: options.storeDir ?? defaultStoreDir(options.workspace),
    continueAsNewAfterTurns: options.continueAsNewAfterTurns ?? null,
    continueAsNewWhenSuggested: options.continueAsNewWhenSuggested ?? true,
    authenticatedControls: options.authenticatedControls ?? false,
  };
}

/** What one run hands the next through continue-as-new. */
export interface SessionCarry extends HostCarry {
  session: unknown;
  conversation: ConversationSnapshot;
  approvals: SessionApproval[];
  policy: PolicyConfig;
  policyOrigin?: PolicyOrigin | null | undefined;
  tools: ToolEntry[];
  toolsRef: string | null;
  /** The identity of the conversation store the session started on. */
  storeId?: string | undefined;
  run: number;
  /** A turn the machine started while the run was handing over: the next run starts it. */
  deferredTurn?: Extract<SessionDirective, { type: 'start_turn' }> | null | undefined;
  /** The newest finished turns, by message id (`send` waits on them). */
  finishedTurns?: FinishedTurn[] | undefined;
  /** Client tools of queued messages and of the held turn (workflows/client-tools.ts). */
  clientTools?: ClientToolsCarry | undefined;
}

export interface SessionResult {
  sessionId: string;
  outcome: 'closed' | 'failed';
  reason: string;
  stats: SessionStats;
  runs: number;
}
