// What a session is started with (its options), what it returns, and what one run hands
// the next through continue-as-new.
import type { ActivityOptions } from '@temporalio/workflow';
import type { BudgetLimits, SessionDirective, SessionStats } from '../machines/index';
import type { PolicyConfig, PolicyConfigInput, PolicyOrigin, SessionApproval } from '../machines/policy';
import type { FinishedTurn } from './finished-turns';
import type { HostCarry } from './host';
import type { ConversationSnapshot } from './runtime';
import type { ToolEntry } from './turn-runner';

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
export interface SessionCarry extends HostCarry {
  session: unknown;
  conversation: ConversationSnapshot;
  approvals: SessionApproval[];
  policy: PolicyConfig;
  policyOrigin?: PolicyOrigin | null | undefined;
  tools: ToolEntry[];
  toolsRef: string | null;
  run: number;
  /** A turn the machine started while the run was handing over: the next run starts it. */
  deferredTurn?: Extract<SessionDirective, { type: 'start_turn' }> | null | undefined;
  /** The newest finished turns, by message id (`send` waits on them). */
  finishedTurns?: FinishedTurn[] | undefined;
}

export interface SessionResult {
  sessionId: string;
  outcome: 'closed' | 'failed';
  reason: string;
  stats: SessionStats;
  runs: number;
}
