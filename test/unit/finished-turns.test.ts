import { describe, expect, it } from 'vitest';
import { createCounters, type TurnEvent, type TurnState } from '../../machines/index';
import { FinishedTurns } from '../../workflows/finished-turns';

const usage = { inputTokens: 1, outputTokens: 2, costUsd: 0, unpricedCalls: 0 };

describe('finished turns (what awaitTurn answers)', () => {
  it('ties each turn to its message by id, so two identical texts keep their own turns', () => {
    const t = new FinishedTurns();
    t.started('s/turn-1', 'msg-a');
    t.started('s/turn-2', 'msg-b');
    expect(t.running('s/turn-1')).toBe('msg-a');
    t.see({ kind: 'turn.completed', turnId: 's/turn-1', finalOutput: 'one', usage } as never);
    t.see({ kind: 'session.turn_finished', turnId: 's/turn-1', outcome: 'completed' } as never);
    t.see({ kind: 'turn.interrupted', turnId: 's/turn-2', partialOutput: 'half' } as never);
    t.see({ kind: 'session.turn_finished', turnId: 's/turn-2', outcome: 'interrupted' } as never);
    expect(t.get('msg-a')).toEqual({ messageId: 'msg-a', turnId: 's/turn-1', outcome: 'completed', output: 'one', usage });
    expect(t.get('msg-b')).toEqual({ messageId: 'msg-b', turnId: 's/turn-2', outcome: 'interrupted', output: 'half', usage: null });
    expect(t.has('msg-c')).toBe(false);
  });

  it("adds what an interrupted call settled for to its turn's usage, before or after the turn finished", () => {
    const t = new FinishedTurns();
    t.started('s/turn-1', 'msg-a');
    t.see({ kind: 'turn.interrupted', turnId: 's/turn-1', partialOutput: 'half' } as never);
    t.billed('s/turn-1', usage);
    t.settled('s/turn-1', { inputTokens: 0, outputTokens: 55, costUsd: 0.001, estimated: true });
    t.see({ kind: 'session.turn_finished', turnId: 's/turn-1', outcome: 'interrupted' } as never);
    t.settled('s/turn-1', { inputTokens: 0, outputTokens: 5, costUsd: null });
    expect(t.get('msg-a')?.usage).toEqual({ inputTokens: 1, outputTokens: 62, costUsd: 0.001, unpricedCalls: 0 });
  });

  it('keeps the newest 100 and carries them into the next run', () => {
    const t = new FinishedTurns();
    for (let i = 1; i <= 105; i++) {
      t.started(`turn-${i}`, `m${i}`);
      t.see({ kind: 'session.turn_finished', turnId: `turn-${i}`, outcome: 'completed' } as never);
    }
    expect(t.has('m5')).toBe(false);
    expect(t.has('m6')).toBe(true);
    const next = new FinishedTurns(t.list());
    expect(next.get('m105')?.turnId).toBe('turn-105');
    expect(next.list()).toHaveLength(100);
  });
});

describe('transition counters carried across continue-as-new', () => {
  it('go on from the counts a previous run handed over', () => {
    const counters = createCounters<TurnState, TurnEvent, unknown>({ transitions: { 'idle --start--> calling_llm': 3 }, rejected: {} });
    counters.after?.({ status: 'idle' } as TurnState, { status: 'calling_llm' } as TurnState, { type: 'start', text: 'x' }, []);
    expect(counters.snapshot().transitions).toEqual({ 'idle --start--> calling_llm': 4 });
  });
});
