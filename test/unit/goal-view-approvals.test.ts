// `keel goal`'s inline approvals: `always` remembers the rule the person saw (and could
// edit), approves only calls it covers, and records the real approver — never `keel --yes`
// unless --yes was given. A plan's `always` does not approve tool calls.
import os from 'node:os';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { GoalHandle } from '../../client/goal-handle';
import { followGoal } from '../../client/cli/goal-view';
import { type LineReader, Output } from '../../client/cli/output';

type Call = { kind: 'approve' | 'deny' | 'approvePlan'; callId?: string; options?: unknown };

function fakeGoal(events: unknown[]): { goal: GoalHandle; calls: Call[] } {
  const calls: Call[] = [];
  const goal = {
    id: 'goal-1',
    async *events() {
      for (const data of events) yield { topic: 'events', data };
    },
    approve: async (callId: string, options: unknown) => void calls.push({ kind: 'approve', callId, options }),
    deny: async (callId: string) => void calls.push({ kind: 'deny', callId }),
    approvePlan: async () => void calls.push({ kind: 'approvePlan' }),
    rejectPlan: async () => undefined,
    result: async () => ({ verdict: 'goal_met' }),
    // The whole call is read again before it is asked (the event holds a preview).
    pendingApprovals: async () => [],
    workflowHandle: { describe: async () => Promise.reject(new Error('no server here')) },
  };
  return { goal: goal as unknown as GoalHandle, calls };
}

function answers(lines: string[]): LineReader {
  return { next: async () => lines.shift() ?? null } as unknown as LineReader;
}

const quiet = () => new Output(false, new Writable({ write: (_chunk, _enc, done) => done() }) as unknown as NodeJS.WriteStream);
const ask = (callId: string, toolName: string, input: unknown) => ({ kind: 'agent.approval_requested', agentId: 'a', taskId: 't', callId, toolName, input, reason: 'mode ask' });
const person = `keel goal (${os.userInfo().username})`;

describe('keel goal approvals', () => {
  it('always on a command remembers the shown rule; a later write_file and another command are asked', async () => {
    const { goal, calls } = fakeGoal([
      { kind: 'plan.approval_requested', planVersion: 1 },
      ask('c1', 'run_command', { command: 'echo hi' }),
      ask('c2', 'run_command', { command: 'echo hi' }),
      ask('w1', 'write_file', { path: 'a.txt', content: 'x' }),
      ask('c3', 'run_command', { command: 'rm -rf /tmp/x' }),
      { kind: 'plan.goal_met' },
    ]);
    // plan: always; c1: always + Enter (keep the rule); w1: n; c3: y
    await followGoal(goal, { out: quiet(), yes: false, ask: answers(['always', 'always', '', 'n', 'y']) });
    expect(calls).toEqual([
      { kind: 'approvePlan' },
      { kind: 'approve', callId: 'c1', options: { scope: 'session', rule: 'run_command(echo hi)', approver: person } },
      { kind: 'approve', callId: 'c2', options: { scope: 'session', rule: 'run_command(echo hi)', approver: `${person}, always` } },
      { kind: 'deny', callId: 'w1' },
      { kind: 'approve', callId: 'c3', options: { approver: person } },
    ]);
  });

  it('the person may edit the rule; "exact" remembers the exact call; --yes is recorded only when given', async () => {
    const edited = fakeGoal([ask('c1', 'run_command', { command: 'npm test -- -u' }), ask('c2', 'run_command', { command: 'npm test' }), { kind: 'plan.goal_met' }]);
    await followGoal(edited.goal, { out: quiet(), yes: false, ask: answers(['always', 'run_command(npm test*)']) });
    expect(edited.calls.map((c) => [c.callId, (c.options as { rule?: string }).rule])).toEqual([
      ['c1', 'run_command(npm test*)'],
      ['c2', 'run_command(npm test*)'],
    ]);
    const exact = fakeGoal([ask('c1', 'run_command', { command: 'rm -rf build' }), ask('c2', 'run_command', { command: 'rm -rf /tmp/x' }), { kind: 'plan.goal_met' }]);
    await followGoal(exact.goal, { out: quiet(), yes: false, ask: answers(['always', 'exact', 'n']) });
    expect(exact.calls).toEqual([
      { kind: 'approve', callId: 'c1', options: { scope: 'session', approver: person } },
      { kind: 'deny', callId: 'c2' },
    ]);
    const yes = fakeGoal([ask('c1', 'run_command', { command: 'ls' }), { kind: 'plan.goal_met' }]);
    await followGoal(yes.goal, { out: quiet(), yes: true, ask: null });
    expect(yes.calls).toEqual([{ kind: 'approve', callId: 'c1', options: { approver: 'keel --yes' } }]);
  });
});

describe('keel goal retries', () => {
  it("shows the planner's and critic's retries: who failed, why, which attempt and how long it waits", async () => {
    const lines: string[] = [];
    const out = new Output(false, new Writable({ write: (chunk: Buffer, _enc, done) => (lines.push(chunk.toString()), done()) }) as unknown as NodeJS.WriteStream);
    const { goal } = fakeGoal([
      { kind: 'plan.goal_received', goalId: 'goal-1', goalDescription: 'fix it' },
      { kind: 'plan.retry_scheduled', goalId: 'goal-1', advisor: 'planner', attempt: 2, maxAttempts: 12, delayMs: 1_000, reason: 'overloaded_error: Overloaded' },
      { kind: 'plan.retry_scheduled', goalId: 'goal-1', advisor: 'critic', attempt: 7, maxAttempts: 12, delayMs: 150_000, reason: 'api_error: Internal\nserver error' },
      { kind: 'plan.goal_met' },
    ]);
    await followGoal(goal, { out, yes: true, ask: null });
    const text = lines.join('');
    expect(text).toContain('planner failed (overloaded_error: Overloaded); attempt 2 of 12 in 1 s');
    expect(text).toContain('critic failed (api_error: Internal server error); attempt 7 of 12 in 2 min 30 s');
  });
});

