// The one retry table for model calls (machines/model-retry.ts) and how the turn applies
// it: the whole call gets at most 3 retries; malformed output and 4xx none; a context
// window one, after compaction; every failed attempt's usage counts, so a budget stops a
// call that keeps failing.
import { describe, expect, it } from 'vitest';
import { createTurn, turnMachine, type TurnDirective, type TurnEvent, type TurnState } from '../../machines/index';
import { failureClassOf, retryDecision, RETRY_TABLE } from '../../machines/model-retry';
import { thinkingFor } from '../../workflows/goal';
import { effectiveMaxTokens, raisedMaxTokens } from '../../workflows/turn-runner';

function drive(state: TurnState, events: TurnEvent[]): { state: TurnState; directives: TurnDirective[] } {
  const directives: TurnDirective[] = [];
  for (const event of events) {
    const r = turnMachine.transition(state, event);
    if (!r.ok) throw new Error(r.error.message);
    state = r.state;
    directives.push(...r.directives);
  }
  return { state, directives };
}

const failed = (extra: Partial<Extract<TurnEvent, { type: 'model_failed' }>> = {}): TurnEvent => ({ type: 'model_failed', message: 'ModelOverloaded: 529', retryable: true, failureClass: 'overloaded', ...extra });
const fire = (s: TurnState): TurnEvent => ({ type: 'timer_fired', timerId: s.status === 'retry_wait' ? s.timerId : 'none' });
const calls = (ds: TurnDirective[]) => ds.filter((d) => d.type === 'call_model');

describe('model retry table', () => {
  it('maps failure types to classes', () => {
    expect(failureClassOf('ModelOverloaded', true)).toBe('overloaded');
    expect(failureClassOf('ModelRateLimited', true)).toBe('overloaded');
    expect(failureClassOf('ModelMalformedResponse', false)).toBe('malformed');
    expect(failureClassOf('ModelContextWindowExceeded', false)).toBe('context_window');
    expect(failureClassOf('ModelStreamDropped', true)).toBe('transient');
    expect(failureClassOf('ModelBadRequest', false)).toBe('fatal');
  });

  it('allows at most 3 retries for any class, 1 s / 2 s / 3 s or the longer retry-after, bounded by time', () => {
    for (const rule of Object.values(RETRY_TABLE.turn)) expect(rule.retries).toBeLessThanOrEqual(3);
    expect([1, 2, 3, 4].map((attempt) => retryDecision('turn', 'transient', attempt, null))).toEqual([
      { retry: true, delayMs: 1_000, compact: false },
      { retry: true, delayMs: 2_000, compact: false },
      { retry: true, delayMs: 3_000, compact: false },
      { retry: false, reason: 'transient: 3 retries spent' },
    ]);
    expect(retryDecision('turn', 'overloaded', 1, 5_000)).toEqual({ retry: true, delayMs: 5_000, compact: false });
    expect(retryDecision('turn', 'overloaded', 1, 120_000)).toMatchObject({ retry: false });
    expect(retryDecision('turn', 'malformed', 1, null)).toMatchObject({ retry: false });
    expect(retryDecision('turn', 'fatal', 1, null)).toMatchObject({ retry: false });
    expect(retryDecision('turn', 'context_window', 1, null)).toEqual({ retry: true, delayMs: 0, compact: true });
    expect(retryDecision('turn', 'context_window', 2, null)).toMatchObject({ retry: false });
  });

  it('a call that always fails makes 4 requests in all, each counted', () => {
    let { state, directives } = drive(createTurn({ turnId: 't' }), [{ type: 'start', text: 'hi' }]);
    const spent = { inputTokens: 100, outputTokens: 5, costUsd: 0.01, estimated: true };
    for (let i = 0; i < 3; i++) {
      const step = drive(state, [failed({ usage: spent })]);
      const next = drive(step.state, [fire(step.state)]);
      state = next.state;
      directives = [...directives, ...step.directives, ...next.directives];
    }
    const last = drive(state, [failed({ usage: spent })]);
    expect(calls([...directives, ...last.directives])).toHaveLength(4);
    expect(last.state).toMatchObject({ status: 'failed', usage: { inputTokens: 400, outputTokens: 20, estimatedCalls: 4 } });
  });

  it('malformed output is never sent again; a budget spent by failed attempts stops the retries', () => {
    const started = drive(createTurn({ turnId: 't' }), [{ type: 'start', text: 'hi' }]).state;
    expect(drive(started, [failed({ failureClass: 'malformed', retryable: false })]).state.status).toBe('failed');
    const limited = drive(createTurn({ turnId: 't', limits: { inputTokens: 150, outputTokens: null, costUsd: null, maxSteps: null } }), [{ type: 'start', text: 'hi' }]).state;
    const once = drive(limited, [failed({ usage: { inputTokens: 100, outputTokens: 0, costUsd: null } })]);
    expect(once.state.status).toBe('retry_wait');
    const twice = drive(drive(once.state, [fire(once.state)]).state, [failed({ usage: { inputTokens: 100, outputTokens: 0, costUsd: null } })]);
    expect(twice.state).toMatchObject({ status: 'completed', reason: 'budget_exhausted', usage: { inputTokens: 200 } });
  });

  it('a cut tool_use is asked again once with the larger limit, then the turn ends truncated', () => {
    const started = drive(createTurn({ turnId: 't', maxTokens: 1_000, raisedMaxTokens: 2_000 }), [{ type: 'start', text: 'hi' }]).state;
    const usage = { inputTokens: 10, outputTokens: 1_000, costUsd: null };
    const cut: TurnEvent = { type: 'model_response', content: [{ type: 'text', text: 'Writing.' }], stopReason: 'max_tokens', usage, cutToolUse: { id: 'x', name: 'write_file' } };
    const first = drive(started, [cut]);
    expect(calls(first.directives)).toEqual([expect.objectContaining({ maxTokens: 2_000, attempt: 2 })]);
    const second = drive(first.state, [cut]);
    expect(calls(second.directives)).toEqual([]);
    expect(second.state).toMatchObject({ status: 'completed', reason: 'truncated', usage: { outputTokens: 2_000 } });
  });
});

describe('output limits and thinking', () => {
  it('adds the thinking budget to max_tokens and doubles it once for a cut tool call, within the ceiling', () => {
    expect(effectiveMaxTokens({ maxTokens: 4_096 })).toBe(4_096);
    expect(effectiveMaxTokens({ maxTokens: 4_096, thinking: { budgetTokens: 2_048 } })).toBe(6_144);
    expect(raisedMaxTokens({ model: 'claude-sonnet-4-6', maxTokens: 4_096 })).toBe(8_192);
    expect(raisedMaxTokens({ model: 'claude-sonnet-4-5', maxTokens: 40_000 })).toBe(64_000);
    expect(raisedMaxTokens({ model: 'claude-sonnet-4-5', maxTokens: 64_000 })).toBeNull();
    // Sonnet 4.6 takes 128 000 (machines/models.ts).
    expect(raisedMaxTokens({ model: 'claude-sonnet-4-6', maxTokens: 64_000 })).toBe(128_000);
    // Within the model's own maximum: Opus 4.1 accepts 32 000 output tokens at most.
    expect(raisedMaxTokens({ model: 'claude-opus-4-1-20250805', maxTokens: 20_000 })).toBe(32_000);
    expect(raisedMaxTokens({ model: 'claude-opus-4-1-20250805', maxTokens: 32_000 })).toBeNull();
  });

  it('gives each goal role its thinking: per role first, then the goal-wide budget', () => {
    const options = { thinking: { budgetTokens: 2_000, byRole: { reviewer: null, architect: { budgetTokens: 8_000 } } } };
    expect(thinkingFor(options, 'coder')).toEqual({ budgetTokens: 2_000 });
    expect(thinkingFor(options, 'architect')).toEqual({ budgetTokens: 8_000 });
    expect(thinkingFor(options, 'reviewer')).toBeUndefined();
    expect(thinkingFor({}, 'coder')).toBeUndefined();
  });
});
