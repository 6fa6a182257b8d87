import { describe, expect, it } from 'vitest';
import { conversationProblems, createCounters, createTurn, observe, turnMachine, type Message, type TurnEvent, type TurnState } from '../../../machines/index';

describe('observers and counters', () => {
  it('calls before/after around accepted transitions and rejected for refused ones, and counts each', () => {
    const calls: string[] = [];
    const counters = createCounters<TurnState, TurnEvent, unknown>();
    const step = observe(
      turnMachine,
      {
        before: (s, e) => calls.push(`before ${s.status} ${e.type}`),
        after: (from, to, e) => calls.push(`after ${from.status} ${e.type} ${to.status}`),
        rejected: (s, e, err) => calls.push(`rejected ${s.status} ${e.type} ${err.code}`),
      },
      counters,
    );
    const idle = createTurn({ turnId: 't' });
    const started = step(idle, { type: 'start', text: 'hi' });
    step(idle, { type: 'steer', text: 'x' });
    if (started.ok) step(started.state, { type: 'steer', text: 'x' });
    expect(calls).toEqual(['before idle start', 'after idle start calling_llm', 'before idle steer', 'rejected idle steer not_allowed', 'before calling_llm steer', 'after calling_llm steer calling_llm']);
    expect(counters.snapshot()).toEqual({
      transitions: { 'idle --start--> calling_llm': 1, 'calling_llm --steer--> calling_llm': 1 },
      rejected: { 'idle × steer (not_allowed)': 1 },
    });
  });
});

describe('conversationProblems', () => {
  const user = (text: string): Message => ({ role: 'user', content: [{ type: 'text', text }] });
  const useBlock = (id: string) => ({ type: 'tool_use' as const, id, name: 'read', input: {} });
  const result = (id: string) => ({ type: 'tool_result' as const, tool_use_id: id, content: 'ok', is_error: false });

  it('accepts a request whose tool_uses are all answered, first and in order', () => {
    expect(
      conversationProblems([user('hi'), { role: 'assistant', content: [useBlock('a'), useBlock('b')] }, { role: 'user', content: [result('a'), result('b'), { type: 'text', text: 'and?' }] }]),
    ).toEqual([]);
  });

  it('names what the Messages API would refuse', () => {
    expect(conversationProblems([])).toEqual(['the conversation is empty']);
    expect(conversationProblems([user('hi'), { role: 'assistant', content: [useBlock('a'), useBlock('b')] }, { role: 'user', content: [result('b'), result('a')] }])).toEqual([
      'message 2: expected tool_results for [a, b] first, in order; got [b, a]',
    ]);
    expect(conversationProblems([user('hi'), { role: 'assistant', content: [useBlock('a')] }, user('no result')])).toEqual([
      'message 2: expected tool_results for [a] first, in order; got [another block]',
      'message 2: 0 tool_result blocks answer 1 tool_use blocks',
    ]);
    expect(conversationProblems([user('hi'), { role: 'assistant', content: [{ type: 'text', text: 'yo' }] }])).toEqual(['message 1: the last message must come from the user']);
    // The API merges consecutive user messages (a refused turn leaves one unanswered); never two assistant ones.
    expect(conversationProblems([user('a'), user('b')])).toEqual([]);
    const said = { role: 'assistant' as const, content: [{ type: 'text' as const, text: 'yo' }] };
    expect(conversationProblems([user('a'), said, said, user('b')])).toEqual([]);
    expect(conversationProblems([user('a'), { role: 'assistant', content: [useBlock('a')] }, said, user('b')])).toContain('message 2: the tool_use blocks of message 1 are not answered');
    // pause_turn: the paused answer goes back last.
    expect(conversationProblems([user('a'), said], { continuation: true })).toEqual([]);
    expect(conversationProblems([user('a'), { role: 'assistant', content: [useBlock('a')] }], { continuation: true })).toEqual([
      "message 1: a continuation ends with the model's paused answer (no tool_use)",
    ]);
    expect(conversationProblems([{ role: 'user', content: [result('x')] }])).toEqual(['message 0: 1 tool_result blocks answer 0 tool_use blocks']);
  });
});
