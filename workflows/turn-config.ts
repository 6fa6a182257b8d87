// What a turn runner is configured with and what it needs of its host (the session, or a
// goal's agent), and the output limits a call sends.
import type { ActivityOptions } from '@temporalio/workflow';
import type { ModelCallInput, ModelCallResult } from '../activities/llm';
import type { CallUsage, LogEvent, TransitionError } from '../machines/index';
import type { Observer } from '../machines/core';
import { maxOutputTokens } from '../machines/model-limits';
import type { PolicyConfig, SessionApproval } from '../machines/policy';
import type { TurnDirective, TurnEvent, TurnResult, TurnState } from '../machines/turn';
import type { ClientTools } from './client-tools';
import type { SubAgents } from './sub-agents';
import type { CompactedEvent, RepairedEvent } from './definitions';
import type { InfraRecoveredEvent, InfraWaitingEvent } from './log-entries';
import type { ConversationLog, SerialQueue, Timers } from './runtime';
import type { WorkspaceRoute } from './workspace-host';
import type { ToolEntry } from './protocol/tool-entry';

/** A tool the model may call, as the setup activity lists it (workflows/protocol/tool-entry.ts). */
export type { ToolEntry };

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
  /**
   * Whether a turn's model calls read the retry table's unattended row (a goal's task
   * agent: nobody is there to send again). Asked when each turn starts (a patch marker).
   */
  unattended?: (() => boolean) | undefined;
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
export function thinkingOf(thinking: TurnRunnerConfig['thinking']): Pick<ModelCallInput, 'thinking' | 'interleavedThinking'> {
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
  /** Applies a local call's result with the clock read as `at` (workflows/host.ts). */
  stampAt(at: number, work: () => void): void;
  tools(): readonly ToolEntry[];
  /** The tool definitions' id in the conversation store, when they are stored there (sent by reference). */
  toolsRef(): string | null;
  /** The identity of the store the session started on (checked by every model call); absent for older runs. */
  storeId?(): string | undefined;
  policy(): { policy: PolicyConfig; approvals: readonly SessionApproval[]; headless: boolean };
  /** Changes the remembered approvals: binds one to the files its calls ran, or drops one whose file changed. */
  updateApprovals?(update: (approvals: readonly SessionApproval[]) => SessionApproval[]): void;
  emit(event: LogEvent | CompactedEvent | RepairedEvent | InfraWaitingEvent | InfraRecoveredEvent): void;
  /** What the turn waits out changed (a wait began or ended): the run's KeelWaiting follows. */
  infraChanged?(): void;
  /** An event the turn refused (a late activity result, a stale timer): recorded, not lost. */
  rejected(source: string, error: TransitionError): void;
  /** The end of a call's stream that came with its result (appended to the `model` topic). */
  streamTail?(tail: ModelCallResult['streamTail']): void;
  /** Text the model had streamed for a call so far (kept when it is interrupted). */
  streamedText(activityId: string): string;
  /** What a call had been billed for so far, from its stream (counted when it is interrupted); null when unknown. */
  streamedUsage?(activityId: string): CallUsage | null;
  /** An interrupted call's connection closed: `usage` is what it was billed for beyond what its turn counted (workflows/turn-results.ts settledBeyond). */
  settled?(turnId: string, callId: string, usage: CallUsage): void;
  /** The turn's `finish` and `ask_human` directives, for the session (or the parent goal). */
  finished(result: TurnResult): void;
  asked(turnId: string, callId: string, question: string): void;
  /** Sees every transition of the turn machine (the host's counters). */
  observer?: Observer<TurnState, TurnEvent, TurnDirective>;
  /** Tools the turn's client declared and runs itself (workflows/client-tools.ts); sessions only. */
  clientTools?: ClientTools;
  /** Runs `agent` calls as child workflows (workflows/sub-agents.ts); a run with sub-agents only. */
  subAgents?: SubAgents;
}

