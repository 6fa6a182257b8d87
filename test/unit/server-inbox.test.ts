// The inbox's tool-call items carry the rule "approve for session" offers: the one rule the
// workflow's approval function accepts for that call, so the console sends what it shows.
import { describe, expect, it } from 'vitest';
import { approvalFrom } from '../../machines/policy';
import type { Json } from '../../machines/index';
import { toolItem } from '../../server/inbox';

const call = (callId: string, name: string, input: { [key: string]: Json }) => ({ callId, name, input, reason: 'asks' });

describe('inbox tool calls', () => {
  it('carry the suggested session rule, which approvalFrom accepts for that call', async () => {
    const calls = [
      call('toolu_a', 'run_command', { command: 'rm -rf "my dir"' }),
      call('toolu_b', 'run_command', { command: ['npm', 'test'] }),
      call('toolu_c', 'write_file', { path: 'notes/a.txt', content: 'x' }),
      call('toolu_d', 'read_file', { path: 'README.md' }),
    ];
    const items = await Promise.all(calls.map((c) => toolItem('session-1', 'session', c, null, null)));
    expect(items.map((i) => (i.type === 'tool_call' ? i.suggestedRule : undefined))).toEqual([
      "run_command(rm -rf 'my dir')",
      'run_command(npm test)',
      'write_file(notes/a.txt)',
      'read_file(README.md)',
    ]);
    for (const [n, item] of items.entries()) {
      if (item.type !== 'tool_call' || item.suggestedRule === null) throw new Error('no suggestion');
      expect(approvalFrom({ callId: item.callId, scope: 'session', rule: item.suggestedRule }, calls, 'ada'), calls[n]!.callId).toMatchObject({ ok: true, remember: { rule: item.suggestedRule } });
    }
  });

  it('offer no rule where none can say the call: approving for the session remembers the exact call', async () => {
    const item = await toolItem('goal-1', 'goal', call('toolu_x', 'run_command', { command: 'make && make install' }), null, 'build');
    expect(item).toMatchObject({ type: 'tool_call', suggestedRule: null, taskId: 'build' });
  });
});
