// What a session is started with (its options: workflows/protocol/session.ts), their one resolver (every default filled in
// once, at the start of a run), what it returns, and what one run hands the next through
// continue-as-new.
import type { BudgetLimits, SessionDirective, SessionStats } from '../machines/index';
import { applyPatch, NO_LIMITS } from '../machines/budget';
import { DEFAULT_MAX_CONSECUTIVE_ERRORS } from '../machines/session';
import { DEFAULT_MAX_PARALLEL_TOOLS, DEFAULT_MAX_TOKENS, DEFAULT_MODEL, defaultStoreDir } from './defaults';
import { DEFAULT_WORKSPACE_HOST_WAIT_MS } from './workspace-host';
import type { PolicyConfig, PolicyOrigin, SessionApproval } from '../machines/policy';
import type { FinishedTurn } from './finished-turns';
import type { HostCarry } from './host';
import type { ClientToolsCarry } from './client-tools';
import type { ConversationSnapshot } from './runtime';
import type { SessionOptions } from './protocol/session';
import type { ToolEntry } from './protocol/tool-entry';
import type { CheckpointCarry } from '../machines/turn-checkpoints';

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
  /** A word for the agent its next turn starts with (its workspace was lost in a host move while no turn ran). */
  agentNotice?: string | null | undefined;
  /** Client tools of queued messages and of the held turn (workflows/client-tools.ts). */
  clientTools?: ClientToolsCarry | undefined;
  /** Turn boundaries and their workspace checkpoints (workflows/session-checkpoints.ts). */
  checkpoints?: CheckpointCarry | undefined;
  /** Sub-agents the session started in its earlier runs: the next one's label goes on from there (`agent-4`, not a second `agent-1`). */
  subAgentsStarted?: number | undefined;
}

export interface SessionResult {
  sessionId: string;
  outcome: 'closed' | 'failed';
  reason: string;
  stats: SessionStats;
  runs: number;
}
