// An attempt lost with its worker was billed: the next attempt reads the lost one's usage
// from its last heartbeat and reports it; with serverRetries 'timeouts_only' every failure
// is non-retryable for Temporal and carries its real retryability and its usage.
import { ApplicationFailure } from '@temporalio/activity';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createModelActivities, type ModelCallInput, type ModelCallResult } from '../../activities/llm';
import { type Standin, startStandin } from '../../standin/server';

let standin: Standin;

beforeAll(async () => {
  standin = await startStandin({ scenario: { rules: [] } });
});

afterAll(async () => {
  await standin?.close();
});

const input: ModelCallInput = { model: 'claude-sonnet-4-5', maxTokens: 256, publish: false, conversation: { kind: 'inline', messages: [{ role: 'user', content: 'hi' }] } };
const lostHeartbeat = { stream: { status: 'streaming', bytes: 900 }, events: 12, attempt: 1, requestId: 'req_1', usage: { inputTokens: 500, outputTokens: 40, costUsd: 0.0021, estimated: true } };
const billed = { input_tokens: 100, output_tokens: 10, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };

function call(attempt: number, heartbeatDetails: unknown, body: ModelCallInput = input): Promise<ModelCallResult> {
  const activities = createModelActivities({ env: { ANTHROPIC_API_KEY: 'sk-ant-unit', ANTHROPIC_BASE_URL: standin.url } });
  return new MockActivityEnvironment({ attempt, heartbeatDetails }).run<[], ModelCallResult, () => Promise<ModelCallResult>>(() => activities.callModel(body));
}

describe('a lost attempt is counted', () => {
  it("adds the lost attempt's last heartbeat usage to the next attempt's result, marked estimated", async () => {
    standin.setScenario({ rules: [{ reply: { content: [{ type: 'text', text: 'Hello.' }], usage: billed } }] });
    const result = await call(2, lostHeartbeat);
    expect(result.usage).toMatchObject({ input_tokens: 100, output_tokens: 10 });
    expect(result.lostAttemptUsage).toEqual({ inputTokens: 500, outputTokens: 40, costUsd: 0.0021, estimated: true });
    expect((await call(1, undefined)).lostAttemptUsage).toBeUndefined();
  });

  it('a lost attempt that left no heartbeat (a short unread call) counts as this request\'s input, estimated, where Temporal retries only timeouts', async () => {
    standin.setScenario({ rules: [{ reply: { content: [{ type: 'text', text: 'Hello.' }], usage: billed } }] });
    const result = await call(2, undefined, { ...input, serverRetries: 'timeouts_only' });
    // Sonnet 4.5: $3 per million input tokens; no output counted for the lost attempt.
    expect(result.lostAttemptUsage).toEqual({ inputTokens: 100, outputTokens: 0, costUsd: expect.closeTo((100 * 3) / 1e6, 12) as number, estimated: true });
    expect(result.usage).toMatchObject({ input_tokens: 100, output_tokens: 10 });
    // Where Temporal retries failures too, a second attempt need not follow a lost one: nothing guessed.
    expect((await call(2, undefined)).lostAttemptUsage).toBeUndefined();
  });

  it("heartbeats the lost attempt's usage with its own: a second lost attempt does not drop the first's", async () => {
    standin.setScenario({ rules: [{ reply: { content: [{ type: 'text', text: 'Hello, slowly.' }], usage: billed, delayMs: 30 } }] });
    const activities = createModelActivities({ env: { ANTHROPIC_API_KEY: 'sk-ant-unit', ANTHROPIC_BASE_URL: standin.url }, heartbeatIntervalMs: 10 });
    const env = new MockActivityEnvironment({ attempt: 2, heartbeatDetails: lostHeartbeat });
    const beats: Array<{ usage?: { inputTokens: number; outputTokens: number; estimated: boolean } | null }> = [];
    env.on('heartbeat', (details: unknown) => beats.push(details as (typeof beats)[number]));
    await env.run<[], ModelCallResult, () => Promise<ModelCallResult>>(() => activities.callModel(input));
    expect(beats.length).toBeGreaterThan(0);
    // Every heartbeat counts the lost 500 / 40; the last also this attempt's 100 input tokens.
    for (const beat of beats) expect(beat.usage?.inputTokens).toBeGreaterThanOrEqual(500);
    expect(beats.at(-1)?.usage).toMatchObject({ inputTokens: 600, estimated: true });
    // What a third attempt would read from them: both.
    expect((await call(3, beats.at(-1))).lostAttemptUsage).toMatchObject({ inputTokens: 600 });
  });

  it('with serverRetries timeouts_only, a retryable failure is non-retryable for Temporal and says what it is, with its usage', async () => {
    standin.setScenario({
      rules: [{ reply: { content: [{ type: 'text', text: 'This breaks off midway.' }], usage: billed }, fault: { kind: 'stream_error', afterEvents: 4, errorType: 'overloaded_error' } }],
    });
    const error = await call(2, lostHeartbeat, { ...input, serverRetries: 'timeouts_only' }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ApplicationFailure);
    const failure = error as ApplicationFailure;
    expect(failure.type).toBe('ModelOverloaded');
    expect(failure.nonRetryable).toBe(true);
    const details = failure.details?.[0] as { retryable: boolean; failureClass: string; usage: { inputTokens: number; estimated: boolean } };
    expect(details).toMatchObject({ retryable: true, failureClass: 'overloaded' });
    // This attempt's 100 input tokens (from message_start) plus the lost attempt's 500.
    expect(details.usage).toMatchObject({ inputTokens: 600, estimated: true });
  });
});
