// One retry table (machines/model-retry.ts) that every caller reads: change a row and the
// wait of that caller changes — the turn's retry timer, the planner's and critic's rounds,
// Temporal's retry of a lost model activity. Before, each turn carried its own 1/2/3 s
// copy: with the table's transient backoff set to 9 s, a turn still waited 1 s.
import { afterEach, describe, expect, it } from 'vitest';
import { MODEL_ACTIVITY_OPTIONS, modelActivityOptions } from '../../../activities/llm-options';
import { afterFailedRound, ANSWER_ROUNDS } from '../../../machines/answer-retry';
import { createTurn, turnMachine, type TurnDirective, type TurnEvent, type TurnState } from '../../../machines/index';
import { LOST_ATTEMPT_RETRY, maxCallAttempts, RETRY_TABLE, type RetryRule } from '../../../machines/model-retry';

type Rows = Record<'turn' | 'answer', Record<'transient' | 'overloaded', RetryRule>>;
const table = RETRY_TABLE as unknown as Rows;
const saved = { turn: table.turn.transient, answer: table.answer.transient };
afterEach(() => {
  table.turn.transient = saved.turn;
  table.answer.transient = saved.answer;
});

function apply(state: TurnState, event: TurnEvent): { state: TurnState; directives: readonly TurnDirective[] } {
  const r = turnMachine.transition(state, event);
  if (!r.ok) throw new Error(r.error.message);
  return r;
}

const ANSWER_WAITS = [1_000, 2_000, 3_000, 5_000, 10_000, 20_000, 30_000];

const transientFailure: TurnEvent = { type: 'model_failed', message: 'ModelServerError: 500', retryable: true, failureClass: 'transient' };

/** The durations of the retry timers a turn starts while its call fails `failures` times. */
function turnWaits(failures: number, init: Parameters<typeof createTurn>[0] = { turnId: 't' }): number[] {
  let { state } = apply(createTurn(init), { type: 'start', text: 'hi' });
  const waits: number[] = [];
  for (let i = 0; i < failures && state.status === 'calling_llm'; i++) {
    const failed = apply(state, transientFailure);
    for (const d of failed.directives) if (d.type === 'start_timer') waits.push(d.durationMs);
    state = failed.state;
    if (state.status === 'retry_wait') state = apply(state, { type: 'timer_fired', timerId: state.timerId }).state;
  }
  return waits;
}

describe('the one retry table', () => {
  it('a turn waits what the table says (1 s, 2 s, 3 s), and nothing of its own', () => {
    expect(turnWaits(4)).toEqual([1_000, 2_000, 3_000]);
    expect(createTurn({ turnId: 't' }).config).not.toHaveProperty('retryBackoffMs');
  });

  it("a task agent's turn reads the unattended row: it waits out about three minutes, a session's turn does not", () => {
    const agent = turnWaits(20, { turnId: 't', retryRow: 'unattended_turn' });
    expect(agent).toEqual([1_000, 2_000, 3_000, 5_000, 10_000, 20_000, 30_000, 30_000, 30_000, 30_000, 30_000]);
    expect(agent.reduce((a, b) => a + b, 0)).toBe(191_000);
    // Seven failures in a row (chaos seed 80023 at 30 %) end a session's turn, not an agent's.
    expect(turnWaits(7)).toHaveLength(3);
    expect(turnWaits(7, { turnId: 't', retryRow: 'unattended_turn' })).toHaveLength(7);
    expect(createTurn({ turnId: 't', retryRow: 'turn' }).config).not.toHaveProperty('retryRow');
  });

  it("changing the turn's row changes the turn's retry timer", () => {
    table.turn.transient = { ...saved.turn, backoffMs: [9_000, 9_500, 9_900] };
    expect(turnWaits(4)).toEqual([9_000, 9_500, 9_900]);
    table.turn.transient = { ...saved.turn, retries: 1 };
    expect(turnWaits(4)).toEqual([1_000]);
  });

  it("a session's shorter backoff (tests) still applies, and cannot raise the table's retries", () => {
    expect(turnWaits(4, { turnId: 't', retryBackoffMs: [50, 50, 50, 50, 50] })).toEqual([50, 50, 50]);
    expect(turnWaits(4, { turnId: 't', retryBackoffMs: [50] })).toEqual([50]);
    expect(maxCallAttempts('turn')).toBe(1 + RETRY_TABLE.turn.transient.retries);
  });

  it('an override only shortens: a longer wait than the table\'s is the table\'s, and the patient rows keep their 11 retries when given 11 waits', () => {
    expect(turnWaits(4, { turnId: 't', retryBackoffMs: [50, 60_000, 500] })).toEqual([50, 2_000, 500]);
    const tenth = Array.from({ length: 11 }, (_, i) => (ANSWER_WAITS[i] ?? 30_000) / 10);
    expect(turnWaits(20, { turnId: 't', retryRow: 'unattended_turn', retryBackoffMs: tenth })).toEqual(tenth);
    const answer = (override: number[]) => Array.from({ length: ANSWER_ROUNDS }, (_, i) => afterFailedRound(i + 1, { retryable: true }, override).next).map((d) => (d.type === 'retry' ? d.delayMs : null));
    expect(answer(tenth)).toEqual([...tenth, null]);
    expect(answer([999_000])).toEqual([1_000, null, ...Array.from({ length: ANSWER_ROUNDS - 2 }, () => null)]);
    // The API's retry-after still wins when longer.
    expect(afterFailedRound(1, { retryable: true, retryAfterMs: 1_000 }, tenth).next).toEqual({ type: 'retry', round: 2, delayMs: 1_000 });
  });

  it("changing the planner's and critic's row changes their rounds", () => {
    const waits = () => Array.from({ length: ANSWER_ROUNDS - 1 }, (_, i) => afterFailedRound(i + 1, { retryable: true }).next).map((d) => (d.type === 'retry' ? d.delayMs : null));
    expect(waits()).toEqual([1_000, 2_000, 3_000, 5_000, 10_000, 20_000, 30_000, 30_000, 30_000, 30_000, 30_000]);
    table.answer.transient = { ...saved.answer, backoffMs: [4_000] };
    expect(waits()).toEqual(Array.from({ length: ANSWER_ROUNDS - 1 }, () => 4_000));
    table.answer.transient = { ...saved.answer, retries: 2 };
    expect(afterFailedRound(2, { retryable: true }).next.type).toBe('retry');
    expect(afterFailedRound(3, { retryable: true }).next).toEqual({ type: 'give_up' });
  });

  it("the model activity's options hold what is in force: Temporal retries a lost attempt once, whatever a caller overrides", () => {
    expect(MODEL_ACTIVITY_OPTIONS.retry).toEqual({ initialInterval: LOST_ATTEMPT_RETRY.backoffMs, maximumAttempts: LOST_ATTEMPT_RETRY.attempts });
    expect(modelActivityOptions({ retry: { initialInterval: 10, maximumAttempts: 9 }, startToCloseTimeout: '5 seconds' })).toMatchObject({
      startToCloseTimeout: '5 seconds',
      heartbeatTimeout: MODEL_ACTIVITY_OPTIONS.heartbeatTimeout,
      retry: { initialInterval: 10, maximumAttempts: 2 },
    });
  });
});
