// docs/state-machines.md is generated from the machines; it must never drift from them.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { goalMachine, sessionMachine, streamMachine, toolCallMachine, turnMachine } from '../../../machines/index';
import { SEED_MAP, type MachineName } from '../../../machines/seed-map';
import { DOC_PATH, renderStateMachinesDoc } from '../../../scripts/docs';

const machines: Record<MachineName, { states: readonly string[]; events: readonly string[] }> = {
  session: sessionMachine,
  turn: turnMachine,
  'tool-call': toolCallMachine,
  autonomy: goalMachine,
  stream: streamMachine,
};

// The state names of the five seeds, as the seeds spell them (../shared/seeds/).
const SEED_STATES: Record<string, readonly string[]> = {
  '000': ['Initializing', 'Active', 'Processing', 'Paused', 'Ended', 'Ready', 'Thinking', 'ExecutingTools', 'WaitingPermission', 'Completed', 'Cancelled', 'Error',
    'Pending', 'Queued', 'CheckingPermission', 'Running', 'Success', 'Failed', 'Timeout', 'Denied', 'Disconnected', 'Connecting', 'Connected', 'Streaming'],
  '001': ['WaitingForUserInput', 'CallingLlm', 'ProcessingLlmResponse', 'ExecutingTools', 'Error', 'ShuttingDown'],
  '002': ['idle', 'streaming', 'tool_executing', 'interrupted', 'completed', 'error', 'pending_call', 'awaiting_approval', 'executing', 'denied', 'completed_result',
    'error_result', 'timeout_result', 'cancelled_result', 'created', 'active', 'paused', 'suspended', 'closing', 'closed', 'archived', 'spawning', 'running_turn',
    'terminated', 'failed', 'goal_received', 'planning', 'reviewing', 'blocked', 'goal_met', 'stopped'],
  '003': ['starting', 'idle', 'running', 'stopped', 'error', 'exited'],
  '004': ['idle', 'awaiting_llm', 'awaiting_tool', 'completed', 'error'],
};

describe('docs/state-machines.md', () => {
  it('is what `npm run docs` generates from the machines today', () => {
    expect(readFileSync(DOC_PATH, 'utf8'), 'docs/state-machines.md is stale: run `npm run docs`').toBe(renderStateMachinesDoc());
  });

  it('maps every state of every seed', () => {
    for (const [seed, states] of Object.entries(SEED_STATES)) {
      const mapped = new Set(SEED_MAP.filter((m) => m.seed === seed && m.kind === 'state').map((m) => m.name.replace(/ \(.*\)$/, '')));
      expect(states.filter((s) => !mapped.has(s)), `seed ${seed}`).toEqual([]);
    }
  });

  it('points only at states and events the machines really have, and explains every drop', () => {
    const wrong = SEED_MAP.filter((m) => {
      if (m.machine === null) return m.note === '';
      if (m.kind === 'action') return false;
      const list = m.kind === 'state' ? machines[m.machine].states : machines[m.machine].events;
      return m.target === null || !list.includes(m.target);
    });
    expect(wrong).toEqual([]);
  });
});
