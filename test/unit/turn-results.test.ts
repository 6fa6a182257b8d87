// The turn runner's translation of what its activities report into turn events
// (workflows/turn-results.ts): every billed token counted, failures classed for the retry
// table, tool results and failures as the call's events.
import { ActivityFailure, ApplicationFailure, CancelledFailure, TimeoutFailure } from '@temporalio/workflow';
import { describe, expect, it } from 'vitest';
import type { ModelCallResult, ModelStreamEvent } from '../../activities/llm';
import { modelFailure, modelResponse, settledBeyond, spentUsage, streamedUsageOf, toolFailure, toolResultEvent } from '../../workflows/turn-results';

const cost = (total: number) => ({ currency: 'USD' as const, total, input: total, output: 0, cacheWrite: 0, cacheRead: 0, serverTools: 0 });

function answer(extra: Partial<ModelCallResult> = {}, content: unknown[] = [{ type: 'text', text: 'hi', citations: null }]): ModelCallResult {
  return {
    message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-6', content, stop_reason: 'end_turn', stop_sequence: null, usage: {} } as unknown as ModelCallResult['message'],
    stopReason: 'end_turn',
    usage: { input_tokens: 100, output_tokens: 20, cache_creation_input_tokens: 30, cache_read_input_tokens: 50 } as ModelCallResult['usage'],
    requestId: 'req_1',
    model: 'claude-sonnet-4-6',
    cost: cost(0.5),
    attempt: 1,
    ...extra,
  };
}

const inActivity = (cause: Error) => new ActivityFailure('activity failed', 'callModel', 'model:t:1:1', 'NON_RETRYABLE_FAILURE', undefined, cause);

describe('a model answer as the turn sees it', () => {
  it('counts cached input, and drops empty text blocks (every later request would be a 400)', () => {
    const event = modelResponse(answer({}, [{ type: 'text', text: '', citations: null }, { type: 'tool_use', id: 'tu_1', name: 'read_file', input: { path: 'a' } }]));
    expect(event.content).toEqual([{ type: 'tool_use', id: 'tu_1', name: 'read_file', input: { path: 'a' } }]);
    expect(event.usage).toEqual({ inputTokens: 180, outputTokens: 20, costUsd: 0.5 });
  });

  it("adds a compaction's summary call and a lost attempt's spend, marked estimated", () => {
    const compaction = { fromMessages: 10, toMessages: 2, fromTokens: 9_000, toTokens: 500, summaryChars: 800, usage: { input_tokens: 1_000, output_tokens: 200 }, costUsd: 0.1 };
    const event = modelResponse(answer({ compaction: compaction as unknown as ModelCallResult['compaction'], lostAttemptUsage: { inputTokens: 40, outputTokens: 4, costUsd: 0.01, estimated: true } }));
    expect(event.usage.inputTokens).toBe(180 + 1_000 + 40);
    expect(event.usage.outputTokens).toBe(20 + 200 + 4);
    expect(event.usage.costUsd).toBeCloseTo(0.61, 10);
    expect(event.usage.estimated).toBe(true);
    // An unpriced compaction makes the whole step's cost unknown, not free.
    expect(modelResponse(answer({ compaction: { ...compaction, costUsd: null } as unknown as ModelCallResult['compaction'] })).usage.costUsd).toBeNull();
  });

  it("carries a refusal's category and explanation, and a tool_use cut by max_tokens", () => {
    const refused = answer({ stopReason: 'refusal' });
    (refused.message as unknown as { stop_details: unknown }).stop_details = { category: 'cyber', explanation: 7 };
    expect(modelResponse(refused).refusal).toEqual({ category: 'cyber', explanation: null });
    expect(modelResponse(answer({ stopReason: 'max_tokens', cutToolUse: { id: 'tu_2', name: 'write_file' } as ModelCallResult['cutToolUse'] })).cutToolUse).toEqual({ id: 'tu_2', name: 'write_file' });
  });
});

describe('a failed model call as the turn sees it', () => {
  it("takes retryability, the retry table's class and the spend from the failure's details", () => {
    const failure = ApplicationFailure.create({
      type: 'ModelOverloaded',
      message: 'overloaded',
      nonRetryable: true,
      details: [{ retryable: true, failureClass: 'overloaded', retryAfterMs: 1_500.4, usage: { inputTokens: 10, outputTokens: 0, costUsd: 0.001 } }],
    });
    expect(modelFailure(inActivity(failure))).toEqual({
      type: 'model_failed',
      message: 'ModelOverloaded: overloaded',
      retryable: true,
      retryAfterMs: 1_500,
      failureClass: 'overloaded',
      usage: { inputTokens: 10, outputTokens: 0, costUsd: 0.001 },
    });
  });

  it('drops what does not parse (it comes from outside): an unknown class, a negative wait, bad usage', () => {
    const failure = ApplicationFailure.create({ type: 'ModelServerError', message: '500', details: [{ failureClass: 'cosmic', retryAfterMs: -1, usage: { inputTokens: -5, outputTokens: 1 } }] });
    expect(modelFailure(failure)).toEqual({ type: 'model_failed', message: 'ModelServerError: 500', retryable: true });
    expect(modelFailure(ApplicationFailure.create({ type: 'ModelBadRequest', message: '400', nonRetryable: true })).retryable).toBe(false);
  });

  it("a lost worker is transient, and its last heartbeat's usage counts as an estimate", () => {
    const lost = new TimeoutFailure('heartbeat', { usage: { inputTokens: 70, outputTokens: 9, costUsd: null } }, 'HEARTBEAT');
    expect(modelFailure(inActivity(lost))).toEqual({
      type: 'model_failed',
      message: 'the model call timed out (HEARTBEAT)',
      retryable: true,
      failureClass: 'transient',
      usage: { inputTokens: 70, outputTokens: 9, costUsd: null, estimated: true },
    });
    expect(modelFailure(new Error('boom'))).toEqual({ type: 'model_failed', message: 'boom', retryable: true });
  });

  it('usage reported by an activity is checked', () => {
    expect(spentUsage({ inputTokens: 1, outputTokens: 2, costUsd: Number.NaN }, false)).toEqual({ inputTokens: 1, outputTokens: 2, costUsd: null });
    expect(spentUsage({ inputTokens: 1.5, outputTokens: 2 }, false)).toBeUndefined();
    expect(spentUsage('lots', false)).toBeUndefined();
  });
});

describe('tool results and failures as the call’s events', () => {
  const facts = { kind: 'command' as const, command: 'make', exitCode: 2, timedOut: false, bytes: 3, lines: 1, limit: 'memory' as const };

  it('a limit, a timeout, an error and a success, with the facts', () => {
    expect(toolResultEvent({ content: 'out of memory', is_error: true }, facts, true)).toEqual({ type: 'limit_hit', message: 'out of memory', facts });
    // Runs before the limit status (the patch says no) end as a plain failure.
    expect(toolResultEvent({ content: 'out of memory', is_error: true }, facts, false)).toEqual({ type: 'failed', error: 'out of memory', facts });
    expect(toolResultEvent({ content: 'slow', is_error: true, timed_out: true }, undefined, false)).toEqual({ type: 'timed_out', message: 'slow' });
    expect(toolResultEvent({ content: 'ok', is_error: false }, undefined, false)).toEqual({ type: 'succeeded', output: 'ok' });
  });

  it('a tool activity lost with its worker fails as worker_lost; one past its time limit times out', () => {
    const lost = toolFailure('run_command', inActivity(new TimeoutFailure('heartbeat', undefined, 'HEARTBEAT')));
    expect(lost.type).toBe('failed');
    expect(lost.type === 'failed' ? lost.error : '').toMatch(/worker/i);
    expect(toolFailure('run_command', inActivity(new TimeoutFailure('late', undefined, 'START_TO_CLOSE'))).type).toBe('timed_out');
    const failed = toolFailure('grep', new Error('disk on fire'));
    expect(failed.type === 'failed' ? failed.error : '').toContain('disk on fire');
  });
});

describe('what an interrupted call had been billed for, from its stream', () => {
  it("counts the latest attempt's input and ~4 characters a token of its streamed text", () => {
    const events: ModelStreamEvent[] = [
      { kind: 'start', callId: 'm1', attempt: 1, requestId: null, model: 'x', inputTokens: 500, inputCostUsd: 0.5, outputUsdPerToken: 0.01 },
      { kind: 'delta', callId: 'm1', attempt: 1, index: 0, block: 'text', text: 'a'.repeat(400) },
      { kind: 'start', callId: 'm1', attempt: 2, requestId: null, model: 'x', inputTokens: 600, inputCostUsd: 0.6, outputUsdPerToken: 0.01 },
      { kind: 'delta', callId: 'm1', attempt: 2, index: 0, block: 'text', text: 'b'.repeat(10) },
      { kind: 'delta', callId: 'other', attempt: 2, index: 0, block: 'text', text: 'c'.repeat(1_000) },
      { kind: 'delta', callId: 'm1', attempt: 1, index: 0, block: 'text', text: 'late' },
    ];
    const usage = streamedUsageOf(events, 'm1');
    expect(usage).toMatchObject({ inputTokens: 600, outputTokens: 3, estimated: true });
    expect(usage?.costUsd).toBeCloseTo(0.63, 10);
    expect(streamedUsageOf([{ kind: 'retry', callId: 'm1', attempt: 1 }], 'm1')).toBeNull();
  });
});

describe('what an interrupted call was billed for once its connection closed', () => {
  const cancelled = (usage: unknown) => inActivity(new CancelledFailure('cancelled', [usage]));
  const counted = { inputTokens: 700, outputTokens: 68, costUsd: 0.0031, estimated: true };
  it('is what the activity read beyond what the turn counted at the interrupt', () => {
    const beyond = settledBeyond(cancelled({ inputTokens: 700, outputTokens: 123, costUsd: 0.0039, estimated: true }), counted);
    expect(beyond).toMatchObject({ inputTokens: 0, outputTokens: 55, estimated: true });
    expect(beyond!.costUsd).toBeCloseTo(0.0008, 9);
  });
  it('is the whole figure when the turn had counted nothing, and nothing when there is nothing more', () => {
    expect(settledBeyond(cancelled({ inputTokens: 700, outputTokens: 10, costUsd: null }), null)).toEqual({ inputTokens: 700, outputTokens: 10, costUsd: null });
    expect(settledBeyond(cancelled({ inputTokens: 700, outputTokens: 60, costUsd: 0.003 }), counted)).toBeNull();
    expect(settledBeyond(cancelled(null), counted)).toBeNull();
    expect(settledBeyond(cancelled({ inputTokens: -1, outputTokens: 'x' }), counted)).toBeNull();
    expect(settledBeyond(inActivity(ApplicationFailure.create({ message: 'x' })), counted)).toBeNull();
  });
});
