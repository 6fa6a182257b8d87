// What a session is started with (its options), what it returns, and what one run hands
// the next through continue-as-new.
import type { ActivityOptions } from '@temporalio/workflow';
import type { BudgetLimits, SessionDirective, SessionStats } from '../machines/index';
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
  /** Shorter waits between a turn's model retries than the retry table's (tests): it can lower the retries, never raise them. Absent: the table's turn rows (machines/model-retry.ts). */
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
  /**
   * Summarize older turns when the conversation exceeds this many tokens, measured by the
   * last response's input_tokens; default 80 % of the model's context window.
   */
  compactAboveTokens?: number;
  /**
   * Extended thinking: up to `budgetTokens` of thinking per call, on top of maxTokens
   * (`interleaved`: between tool calls too); or `{ adaptive: true }`: the model decides.
   */
  thinking?: { budgetTokens: number; interleaved?: boolean } | { adaptive: true };
  /** Prompt caching (default true; activities/llm-cache.ts). */
  promptCaching?: boolean;
  /** `1h` keeps the cache across a wait on people longer than 5 minutes (writes cost 2× input instead of 1.25×). */
  promptCacheTtl?: '5m' | '1h';
  /** Set by Keel's clients when they hold the encryption keys: `resume`, `stop`, `reset`,
   *  `restart` and `approvePlan` must carry their (empty, encrypted) argument. */
  authenticatedControls?: boolean;
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
