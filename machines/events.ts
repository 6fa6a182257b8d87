// The event log ("runes", SPEC §3): what every transition appends. Entries are data —
// `{ kind, ...payload }`; the runner adds `seq` and `at` when it publishes them, so the
// machines stay free of clocks and counters they cannot own.
import type { Exhaustion, Usage } from './budget';
import type { Json } from './core';
import type { ToolFacts } from './tool-result';
import type { CompleteReason, TurnEnd } from './turn/outcome';

/** `limit`: the sandbox stopped the call at one of its resource limits (the result's facts say which). */
export type ToolResultStatus = 'success' | 'error' | 'timeout' | 'limit' | 'cancelled' | 'denied';

/** Payload of every kind, by kind. The kinds of SPEC §3 first, then the few Keel adds for
 *  transitions §3 does not name (each says why it exists). */
export interface LogPayloads {
  // session (seed 002 Session)
  'session.created': { sessionId: string };
  'session.activated': { sessionId: string; rootAgentId: string };
  'session.paused': { sessionId: string; reason: string };
  'session.resumed': { sessionId: string };
  'session.suspended': { sessionId: string; reason: 'budget' | 'error_threshold' | 'setup'; budget: Exhaustion | null; errors: number; error?: string };
  'session.unsuspended': { sessionId: string; via: 'resume' | 'reset' | 'raise_budget' | 'restart' };
  'session.closing': { sessionId: string; reason: string };
  'session.closed': { sessionId: string; finalStats: SessionStats };
  // Keel: a message is never lost, so its arrival (and whether it waits) is recorded.
  'session.message_received': { sessionId: string; messageId: string; queued: boolean; queueLength: number };
  // Keel: seed 000's NeedInput / Resume — the agent asked the human and got an answer.
  'session.input_requested': { sessionId: string; turnId: string; callId: string; question: string };
  'session.input_received': { sessionId: string; turnId: string; callId: string };
  // Keel: signals that act on the running turn, recorded where the human sent them.
  'session.control': { sessionId: string; signal: 'interrupt' | 'steer' | 'stop'; turnId: string | null };
  'session.turn_finished': { sessionId: string; turnId: string; outcome: TurnEnd; queueLength: number };
  // Keel: an interrupted model call reads on until its connection closes (after the turn ended); what it was billed beyond the turn's count then.
  'session.usage_settled': { sessionId: string; turnId: string; callId: string; inputTokens: number; outputTokens: number; costUsd: number | null };
  'session.budget_raised': { sessionId: string; limits: Json };
  'session.failed': { sessionId: string; error: string };
  'session.restarting': { sessionId: string };

  // turn (seed 002 TurnEngine)
  'turn.started': { turnId: string; input: string };
  'turn.tool_calls_received': { turnId: string; step: number; callIds: string[] };
  'turn.tools_finished': { turnId: string; step: number; results: { callId: string; status: ToolResultStatus }[] };
  'turn.completed': { turnId: string; reason: CompleteReason; finalOutput: string | null; usage: Usage; stopReason: string | null };
  'turn.interrupted': { turnId: string; reason: string; partialOutput: string | null };
  'turn.error': { turnId: string; errorType: 'non_retryable' | 'retries_exhausted'; message: string; attempts: number };
  // Keel: seed 001's second-tier retry, visible so a user knows why nothing happens.
  'turn.retry_scheduled': { turnId: string; step: number; attempt: number; delayMs: number; error: string };
  // Keel: the model stopped at max_tokens (inside a tool call when `inToolUse`): the answer is cut.
  'turn.truncated': { turnId: string; step: number; inToolUse: boolean; maxTokens: number | null };
  // Keel: the model refused (stop_reason refusal); the API's category and explanation, verbatim.
  'turn.refused': { turnId: string; step: number; category: string | null; explanation: string | null };
  // Keel: the turn called the model again without new user input, and why.
  'turn.continued': { turnId: string; step: number; why: 'pause_turn' | 'max_tokens' | 'context_window'; maxTokens: number | null };
  // Keel: steer is applied at the next safe boundary; both moments are recorded.
  'turn.steer_queued': { turnId: string; text: string };
  'turn.steer_applied': { turnId: string; step: number; count: number };

  // tool (seed 002 Tool lifecycle)
  'tool.call': { callId: string; toolName: string; arguments: Json };
  'tool.approval_requested': { callId: string; toolName: string; policyReason: string | null };
  'tool.approved': { callId: string; approver: string; scope: 'once' | 'session' };
  'tool.denied': { callId: string; by: 'policy' | 'human'; reason: string };
  // `facts`: what the tool did as data (exit code, files changed, bytes read), when it says.
  'tool.result': { callId: string; status: ToolResultStatus; output: string; facts?: ToolFacts };
  // Keel: the call passed policy and waits for a concurrency permit.
  'tool.queued': { callId: string };
  'tool.started': { callId: string };
  // Keel: a call of a tool the client declared (AG-UI frontend tool): the client runs it and sends the result.
  'tool.client_requested': { turnId: string; callId: string; toolName: string; arguments: Json };

  // Keel: a sub-agent an `agent` call started (machines/sub-agents.ts), under that call's id (as the Agent SDK's parent_tool_use_id).
  'subagent.started': { callId: string; agentId: string; label: string; agentType: string | null; fork: boolean; depth: number };
  // Keel: a sub-agent's tool call, as its reports tell its parent (status null: still running).
  'subagent.tool': { callId: string; agentId: string; label: string; command: string | null; file: string | null };
  'subagent.finished': { callId: string; agentId: string; label: string; outcome: 'succeeded' | 'failed' | 'cancelled'; summary: string; usage: Usage; steps: number };

  // agents (seed 002 Agent lifecycle), emitted for the autonomy loop's child agents
  'agent.spawning': { agentId: string; role: string; parentId: string; taskId: string };
  'agent.ready': { agentId: string; taskId: string };
  'agent.failed': { agentId: string; taskId: string; error: string };
  'agent.terminated': { agentId: string; taskId: string; reason: string; usage: Usage };

  // plan (seed 002 Autonomy loop)
  'plan.goal_received': { goalId: string; goalDescription: string };
  'plan.created': { goalId: string; planVersion: number; tasks: Json };
  'plan.updated': { goalId: string; planVersion: number; changes: string; tasks: Json };
  'plan.task_assigned': { goalId: string; taskId: string; agentId: string; attempt: number };
  'plan.task_started': { goalId: string; taskId: string; attempt: number };
  'plan.task_completed': { goalId: string; taskId: string; outcome: 'succeeded' | 'failed'; result: string | null; evidence: string[]; attempt: number };
  'plan.critique': { goalId: string; cycle: number; verdict: 'pass' | 'follow_up' | 'replan'; findings: string };
  'plan.goal_met': { goalId: string; summary: string };
  'plan.stopped': { goalId: string; reason: string };
  // Keel: planning that the seed leaves implicit — approval, invalid plans, the blocked state.
  'plan.requested': { goalId: string; attempt: number; feedback: string | null; errors: string[] };
  'plan.approval_requested': { goalId: string; planVersion: number };
  'plan.approved': { goalId: string; planVersion: number; by: 'human' | 'auto' };
  'plan.rejected': { goalId: string; planVersion: number; feedback: string };
  'plan.invalid': { goalId: string; attempt: number; errors: string[] };
  'plan.blocked': { goalId: string; taskIds: string[] };
  'plan.task_resolved': { goalId: string; taskId: string; action: 'retry' | 'skip' | 'edit' };
  // Keel: the planner's or critic's call failed and is tried again after a wait (the retry
  // table's `answer` row): visible so a goal waiting minutes for its planner says why.
  'plan.retry_scheduled': { goalId: string; advisor: 'planner' | 'critic'; attempt: number; maxAttempts: number; delayMs: number; reason: string };

  // stream connection (seed 000), reported by the model activity
  'stream.connecting': { attempt: number };
  'stream.connected': { attempt: number };
  'stream.streaming': { attempt: number };
  'stream.completed': { totalBytes: number };
  'stream.failed': { attempts: number; error: string };
  'stream.disconnected': { totalBytes: number };

  // Keel: every exhausted budget says which limit and by how much.
  'budget.exhausted': Exhaustion & { scope: string };
}

export type LogKind = keyof LogPayloads;

export type LogEvent = { [K in LogKind]: { readonly kind: K } & LogPayloads[K] }[LogKind];

export interface SessionStats {
  turns: number;
  toolCalls: Record<ToolResultStatus, number>;
  usage: Usage;
}

export interface EmitEvent {
  readonly type: 'emit_event';
  readonly event: LogEvent;
}

export function emit<K extends LogKind>(kind: K, payload: LogPayloads[K]): EmitEvent {
  return { type: 'emit_event', event: { kind, ...payload } as LogEvent };
}

/** The section-3 kinds, in order: used by docs and tests. */
export const SPEC_KINDS = [
  'session.created',
  'session.activated',
  'session.paused',
  'session.resumed',
  'session.suspended',
  'session.unsuspended',
  'session.closing',
  'session.closed',
  'turn.started',
  'turn.tool_calls_received',
  'turn.tools_finished',
  'turn.completed',
  'turn.interrupted',
  'turn.error',
  'tool.call',
  'tool.approval_requested',
  'tool.approved',
  'tool.denied',
  // SPEC §3's tool.progress is not in the event log: no transition makes it. The tool
  // activity publishes it on the stream's tool topic (activities/tools/progress.ts).
  'tool.result',
  'agent.spawning',
  'agent.ready',
  'agent.failed',
  'agent.terminated',
  'plan.goal_received',
  'plan.created',
  'plan.updated',
  'plan.task_assigned',
  'plan.task_started',
  'plan.task_completed',
  'plan.critique',
  'plan.goal_met',
  'plan.stopped',
] as const satisfies readonly LogKind[];

/** The kinds Keel adds beyond SPEC §3 (each explained in LogPayloads). */
export const KEEL_KINDS = [
  'session.message_received',
  'session.turn_finished',
  'session.usage_settled',
  'session.input_requested',
  'session.input_received',
  'session.control',
  'session.budget_raised',
  'session.failed',
  'session.restarting',
  'turn.retry_scheduled',
  'turn.truncated',
  'turn.refused',
  'turn.continued',
  'turn.steer_queued',
  'turn.steer_applied',
  'tool.queued',
  'tool.started',
  'tool.client_requested',
  'subagent.started',
  'subagent.tool',
  'subagent.finished',
  'plan.requested',
  'plan.approval_requested',
  'plan.approved',
  'plan.rejected',
  'plan.invalid',
  'plan.blocked',
  'plan.task_resolved',
  'plan.retry_scheduled',
  'stream.connecting',
  'stream.connected',
  'stream.streaming',
  'stream.completed',
  'stream.failed',
  'stream.disconnected',
  'budget.exhausted',
] as const satisfies readonly LogKind[];

// Compile-time check that the two lists name every kind, so the docs cannot miss one.
type Unlisted = Exclude<LogKind, (typeof SPEC_KINDS)[number] | (typeof KEEL_KINDS)[number]>;
export const EVERY_KIND_LISTED: [Unlisted] extends [never] ? true : Unlisted = true;
