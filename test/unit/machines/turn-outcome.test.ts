// The turn's outcomes are listed once (machines/turn/outcome.ts) and every copy is derived
// from them: the turn's result, the session's event, the session's record of finished
// turns and the SDK's TurnOutcome. Before, FinishedTurn and the SDK listed 5 of the 7 and a
// cast hid it: an SDK user's switch never saw `refused` or `truncated`.
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { TurnOutcome } from '../../../client/index';
import { assertNever } from '../../../machines/core';
import { createTurn, turnMachine, TURN_OUTCOMES, type LogPayloads, type TurnEnd, type TurnResult } from '../../../machines/index';
import type { FinishedTurn as TaskTurn } from '../../../machines/task-outcome';
import { FinishedTurns, type FinishedTurn } from '../../../workflows/finished-turns';

/** What an SDK user writes: type-checked to be exhaustive (tsc fails when an outcome is missing). */
function describeOutcome(outcome: TurnOutcome['outcome']): string {
  switch (outcome) {
    case 'completed':
      return 'answered';
    case 'max_steps':
      return 'step limit';
    case 'budget_exhausted':
      return 'budget';
    case 'interrupted':
      return 'interrupted';
    case 'failed':
      return 'failed';
    case 'truncated':
      return 'cut at max_tokens';
    case 'refused':
      return 'refused';
    default:
      return assertNever(outcome);
  }
}

describe('turn outcomes, listed once', () => {
  it('every copy has the same type as the machine’s result', () => {
    expectTypeOf<TurnResult['outcome']>().toEqualTypeOf<TurnEnd>();
    expectTypeOf<FinishedTurn['outcome']>().toEqualTypeOf<TurnEnd>();
    expectTypeOf<TurnOutcome['outcome']>().toEqualTypeOf<TurnEnd>();
    expectTypeOf<TaskTurn['outcome']>().toEqualTypeOf<TurnEnd>();
    expectTypeOf<LogPayloads['session.turn_finished']['outcome']>().toEqualTypeOf<TurnEnd>();
    expect(TURN_OUTCOMES.map(describeOutcome)).toHaveLength(7);
  });

  it('a refused turn reaches awaitTurn (and so `send`) as refused', () => {
    let state = turnMachine.transition(createTurn({ turnId: 's/turn-1' }), { type: 'start', text: 'do something bad' });
    if (!state.ok) throw new Error(state.error.message);
    state = turnMachine.transition(state.state, {
      type: 'model_response',
      content: [],
      stopReason: 'refusal',
      usage: { inputTokens: 10, outputTokens: 0, costUsd: 0 },
      refusal: { category: 'cyber', explanation: null },
    });
    if (!state.ok) throw new Error(state.error.message);
    const finish = state.directives.find((d) => d.type === 'finish');
    expect(finish?.type === 'finish' ? finish.result.outcome : null).toBe('refused');
    const turns = new FinishedTurns();
    turns.started('s/turn-1', 'msg-1');
    const event = { kind: 'session.turn_finished', sessionId: 's', turnId: 's/turn-1', outcome: 'refused', queueLength: 0 } satisfies { kind: string } & LogPayloads['session.turn_finished'];
    turns.see(event);
    const seen = turns.get('msg-1');
    expect(seen?.outcome).toBe('refused');
    expect(describeOutcome(seen?.outcome ?? 'failed')).toBe('refused');
  });
});
