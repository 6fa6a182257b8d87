// What the `KeelStatus` search attribute shows: where a workflow rests, not each step of a
// turn. Every upsert is a history event and a visibility write; a session went
// active → processing → active on every turn, an agent through calling_llm and
// executing_tools on every step. Search attributes are for finding workflows that need
// someone (`temporal workflow list --query`, the Web UI), and visibility lags anyway; the
// live state of a turn is in the details, the `state` query and the event stream.
import type { SessionStatus } from './session/index';
import type { TurnStatus } from './turn/index';

/**
 * A session's KeelStatus: a running turn is part of being active (the session takes messages).
 * With `initializingIsActive` so is loading its setup (it takes messages then too, and queues
 * them): a session started as `active` writes nothing until it needs someone or closes. Runs
 * recorded before it wrote `initializing` first, and keep doing so.
 */
export function sessionSearchStatus(status: SessionStatus, initializingIsActive = false): Exclude<SessionStatus, 'processing'> {
  return status === 'processing' || (initializingIsActive && status === 'initializing') ? 'active' : status;
}

export type AgentSearchStatus = 'idle' | 'working' | 'completed' | 'interrupted' | 'failed';

/** A task agent's KeelStatus: its turn's steps are one `working`; where it ends is written. */
export function agentSearchStatus(status: TurnStatus): AgentSearchStatus {
  switch (status) {
    case 'calling_llm':
    case 'retry_wait':
    case 'executing_tools':
      return 'working';
    case 'idle':
    case 'completed':
    case 'interrupted':
    case 'failed':
      return status;
  }
}
