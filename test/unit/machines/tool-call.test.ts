import { describe, expect, it } from 'vitest';
import { createToolCall, toolCallMachine, type ToolCallEvent, type ToolCallState } from '../../../machines/index';
import { accepted, kinds, ofType } from './helpers';

function call(kind: 'tool' | 'ask' = 'tool') {
  return createToolCall({ callId: 'c', name: kind === 'ask' ? 'ask_user' : 'run_command', input: { command: 'npm test' }, readOnly: false, kind, approvalTimeoutMs: 10_000 });
}

function run(state: ToolCallState, ...evs: ToolCallEvent[]) {
  let s = state;
  const directives = [];
  for (const ev of evs) {
    const r = accepted(toolCallMachine.transition(s, ev));
    s = r.state;
    directives.push(...r.directives);
  }
  return { state: s, directives };
}

describe('tool-call machine', () => {
  it('announces the call and asks the policy before anything else', () => {
    const created = call();
    expect(created.state.status).toBe('pending');
    expect(kinds(created.directives)).toEqual(['tool.call']);
    expect(ofType(created.directives, 'check_policy')).toHaveLength(1);
    expect(ofType(call('ask').directives, 'check_policy')).toEqual([]);
  });

  it('goes through approval and a permit to success, with one result', () => {
    const { state, directives } = run(
      call().state,
      { type: 'policy_decided', decision: 'ask', reason: 'commands ask' },
      { type: 'approved', approver: 'ann', scope: 'session' },
      { type: 'permit_granted' },
      { type: 'succeeded', output: 'all passed' },
    );
    expect(state).toMatchObject({ status: 'succeeded', result: { content: 'all passed', isError: false } });
    expect(kinds(directives)).toEqual(['tool.approval_requested', 'tool.approved', 'tool.queued', 'tool.started', 'tool.result']);
    expect(ofType(directives, 'cancel_timer')).toEqual([{ type: 'cancel_timer', timerId: 'approval:c' }]);
  });

  it('never runs before approval and never finishes twice', () => {
    const waiting = run(call().state, { type: 'policy_decided', decision: 'ask' }).state;
    expect(toolCallMachine.canTransition(waiting, { type: 'permit_granted' })).toBe(false);
    const done = run(waiting, { type: 'denied', reason: 'not now' }).state;
    expect(done).toMatchObject({ status: 'denied', by: 'human', result: { content: 'Denied: not now. The tool was not run.', isError: true } });
    for (const ev of [{ type: 'cancel' }, { type: 'succeeded', output: 'x' }, { type: 'approved' }] as ToolCallEvent[]) {
      expect(toolCallMachine.transition(done, ev)).toMatchObject({ ok: false, error: { code: 'not_allowed', state: 'denied' } });
    }
  });

  it('cancels a running call by cancelling its activity', () => {
    const { state, directives } = run(call().state, { type: 'policy_decided', decision: 'allow' }, { type: 'permit_granted' }, { type: 'cancel', reason: 'interrupted' });
    expect(state).toMatchObject({ status: 'cancelled', result: { content: 'Cancelled: interrupted. The tool did not finish.' } });
    expect(ofType(directives, 'cancel_activity')).toEqual([{ type: 'cancel_activity', activityId: 'tool:c' }]);
  });

  it('refuses a stale approval timer', () => {
    const waiting = run(call().state, { type: 'policy_decided', decision: 'ask' }).state;
    expect(toolCallMachine.transition(waiting, { type: 'timer_fired', timerId: 'approval:other' })).toMatchObject({ ok: false, error: { code: 'guard_failed' } });
    expect(run(waiting, { type: 'timer_fired', timerId: 'approval:c' }).state.status).toBe('timed_out');
  });

  it('a sandbox limit ends a running call as `limit`, with one result whose status says so', () => {
    const facts = { kind: 'command' as const, command: 'yes > big', exitCode: null, timedOut: false, bytes: 0, lines: 0, limit: 'file-size' as const };
    const { state, directives } = run(call().state, { type: 'policy_decided', decision: 'allow' }, { type: 'permit_granted' }, { type: 'limit_hit', message: '[limit: file size limit: 1 MiB]', facts });
    expect(state).toMatchObject({ status: 'limit', result: { content: '[limit: file size limit: 1 MiB]', isError: true, facts: { limit: 'file-size' } } });
    expect(toolCallMachine.isTerminal(state)).toBe(true);
    expect(ofType(directives, 'emit_event').filter((d) => d.event.kind === 'tool.result').map((d) => d.event)).toEqual([
      { kind: 'tool.result', callId: 'c', status: 'limit', output: '[limit: file size limit: 1 MiB]', facts },
    ]);
    // Only a running call can hit a limit, and a finished one never finishes again.
    const waiting = run(call().state, { type: 'policy_decided', decision: 'ask' }).state;
    expect(toolCallMachine.canTransition(waiting, { type: 'limit_hit', message: 'x' })).toBe(false);
    expect(toolCallMachine.canTransition(state, { type: 'succeeded', output: 'x' })).toBe(false);
  });
});
