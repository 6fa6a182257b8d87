// approvalFrom: the one decision of what an "approve" answer means, shared by the session's,
// the agent's and the goal's handlers (machines/approval.ts).
import { describe, expect, it } from 'vitest';
import { approvalFrom, suggestedSessionRule, type WaitingCall } from '../../machines/policy';
import { defaultPolicy, evaluatePolicy } from '../../machines/policy';
import { matching } from './tools/context';

const rm: WaitingCall = { callId: 'toolu_rm', name: 'run_command', input: { command: 'rm -rf build' } };
const note: WaitingCall = { callId: 'toolu_note', name: 'write_file', input: { path: 'NOTE.md', content: 'x' } };
const waiting = [rm, note];

describe('approvalFrom', () => {
  it('approves once: nothing remembered', () => {
    expect(approvalFrom({ callId: 'toolu_rm' }, waiting, 'ada')).toEqual({ ok: true, callId: 'toolu_rm', scope: 'once', remember: null, label: null, legacyRule: null });
  });

  it('for the session without a rule: the exact call, and the rule old histories remembered', () => {
    const d = approvalFrom({ callId: 'toolu_rm', scope: 'session' }, waiting, 'ada');
    expect(d).toEqual({
      ok: true,
      callId: 'toolu_rm',
      scope: 'session',
      remember: { call: { tool: 'run_command', input: '{"command":"rm -rf build"}' }, grantedBy: 'ada' },
      label: 'exactly run_command {"command":"rm -rf build"}',
      legacyRule: 'run_command(rm -rf*)',
    });
    // What it remembers allows that call again and nothing else.
    const approvals = d.ok && d.remember ? [d.remember] : [];
    expect(evaluatePolicy(defaultPolicy, { tool: 'run_command', input: { command: 'rm -rf build' } }, { approvals }).decision).toBe('allow');
    expect(evaluatePolicy(defaultPolicy, { tool: 'run_command', input: { command: 'rm -rf /' } }, { approvals }).decision).toBe('ask');
  });

  it('for the session with a rule that covers the call: the rule', () => {
    expect(approvalFrom({ callId: 'toolu_note', scope: 'session', rule: 'write_file(*.md)' }, waiting, 'ada')).toEqual({
      ok: true,
      callId: 'toolu_note',
      scope: 'session',
      remember: { rule: 'write_file(*.md)', grantedBy: 'ada' },
      label: 'write_file(*.md)',
      legacyRule: null,
    });
  });

  it('refuses, each with its own code: an unknown call, a rule without scope session, a bad rule, a rule that does not cover the call', () => {
    expect(approvalFrom({ callId: 'toolu_nope' }, waiting, 'ada')).toEqual({ ok: false, code: 'unknown_call', message: 'unknown call id toolu_nope: waiting for approval: toolu_rm, toolu_note' });
    expect(approvalFrom({ callId: 'toolu_nope' }, [], 'ada')).toEqual({ ok: false, code: 'unknown_call', message: 'unknown call id toolu_nope: no tool call is waiting for approval' });
    expect(approvalFrom({ callId: 'toolu_note', rule: 'write_file(NOTE.md)' }, waiting, 'ada')).toMatchObject({ ok: false, code: 'rule_needs_session_scope' });
    expect(approvalFrom({ callId: 'toolu_note', scope: 'once', rule: 'write_file(NOTE.md)' }, waiting, 'ada')).toMatchObject({ ok: false, code: 'rule_needs_session_scope' });
    expect(approvalFrom({ callId: 'toolu_note', scope: 'session', rule: 'write_file()' }, waiting, 'ada')).toMatchObject({ ok: false, code: 'invalid_rule', message: matching(/^approve: .*empty parentheses/) });
    expect(approvalFrom({ callId: 'toolu_note', scope: 'session', rule: 'write_file(OTHER.md)' }, waiting, 'ada')).toEqual({
      ok: false,
      code: 'rule_does_not_cover',
      message: 'approve: rule "write_file(OTHER.md)" does not cover the call being approved (write_file {"content":"x","path":"NOTE.md"})',
    });
    // A rule for another tool does not cover it either.
    expect(approvalFrom({ callId: 'toolu_rm', scope: 'session', rule: 'write_file' }, waiting, 'ada')).toMatchObject({ ok: false, code: 'rule_does_not_cover' });
  });

  it('the suggested session rule is one approvalFrom accepts for that call', () => {
    for (const call of waiting) {
      const rule = suggestedSessionRule(call);
      expect(rule).toBeDefined();
      expect(approvalFrom({ callId: call.callId, scope: 'session', rule }, waiting, 'ada')).toMatchObject({ ok: true, remember: { rule } });
    }
    expect(suggestedSessionRule({ name: 'run_command', input: { command: 'make && make install' } })).toBeUndefined();
  });
});
