import { describe, expect, it } from 'vitest';
import { agentSearchStatus, sessionSearchStatus } from '../../../machines/search-status';
import type { SessionStatus } from '../../../machines/session';
import type { TurnStatus } from '../../../machines/turn';

describe('KeelStatus rules', () => {
  it("a session's running turn is active; every other state is written as it is", () => {
    const all: SessionStatus[] = ['initializing', 'active', 'processing', 'awaiting_input', 'paused', 'suspended', 'closing', 'closed', 'failed'];
    expect(all.map((status) => sessionSearchStatus(status))).toEqual(['initializing', 'active', 'active', 'awaiting_input', 'paused', 'suspended', 'closing', 'closed', 'failed']);
    // A stamped run was started showing `active`: loading its setup does not change that.
    expect(all.map((status) => sessionSearchStatus(status, true))).toEqual(['active', 'active', 'active', 'awaiting_input', 'paused', 'suspended', 'closing', 'closed', 'failed']);
  });

  it("an agent's steps are one working; idle and how the turn ended are written", () => {
    const all: TurnStatus[] = ['idle', 'calling_llm', 'retry_wait', 'executing_tools', 'completed', 'interrupted', 'failed'];
    expect(all.map(agentSearchStatus)).toEqual(['idle', 'working', 'working', 'working', 'completed', 'interrupted', 'failed']);
  });
});
