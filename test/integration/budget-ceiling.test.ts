// A budget is a ceiling before the call: each call is shrunk to what the output and USD
// budgets leave, or not made; the session stops with budget_exhausted and the figures, and
// send() to a session suspended on its budget answers at once with the reason.
import { describe, expect, it } from 'vitest';
import { KeelClient } from '../../client/index';
import { costOf, DEFAULT_PRICES } from '../../activities/llm-pricing';
import { usageQuery, userMessageUpdate } from '../../workflows/definitions';
import { say, sessionEnv, use } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();

const billed = (input: number, output: number) => ({ input_tokens: input, output_tokens: output, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
const maxTokensSent = (s: { standin: { requests: { body: unknown }[] } }) => s.standin.requests.map((r) => (r.body as { max_tokens: number }).max_tokens);

describe('budget ceiling', () => {
  it('a raised limit after a cut tool call is clamped to the output budget left: the session ends at its limit, not 2.46× past it', async () => {
    const cut = {
      content: [{ type: 'tool_use' as const, name: 'write_file', input: { path: 'big.txt', content: 'x'.repeat(400) }, cutAfterChars: 60 }],
    };
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        { name: 'cut', match: { lastUserContains: 'write' }, times: 1, reply: { ...cut, usage: billed(500, 4_096) } },
        // Would run to 8 192 tokens if asked for them.
        { name: 'long', match: { lastUserContains: 'write' }, reply: { ...say('A long answer.'), usage: billed(600, 8_192) } },
      ],
    });
    await s.run(async () => {
      const run = await s.start({ maxTokens: 4_096, limits: { outputTokens: 5_000 } });
      await run.handle.executeUpdate(userMessageUpdate, { args: ['write a big file'] });
      const suspended = await run.waitForState((v) => v.status === 'suspended');
      expect(maxTokensSent(s)).toEqual([4_096, 904]);
      expect(suspended.usage.usage.outputTokens).toBe(5_000);
      expect(suspended.usage.exhaustion).toMatchObject({ limit: 'output_tokens', allowed: 5_000, used: 5_000, over: 0 });
    });
  });

  it('a USD budget shrinks each call to its worst case and stops before one that cannot fit; spend never crosses it', async () => {
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        // A tool loop that would go on for ever, each answer as long as it may be.
        { match: { lastUserContains: 'loop' }, reply: { ...use('read_file', { path: 'README.md' }), usage: billed(2_000, 1_500) } },
        { match: {}, reply: { ...use('read_file', { path: 'README.md' }), usage: billed(2_000, 1_500) } },
      ],
    });
    await s.run(async () => {
      const limit = 0.05;
      const run = await s.start({ model: 'claude-opus-4-1', maxTokens: 4_096, limits: { costUsd: limit } });
      await run.handle.executeUpdate(userMessageUpdate, { args: ['loop'] });
      const suspended = await run.waitForState((v) => v.status === 'suspended');
      const { usage } = await run.handle.query(usageQuery);
      // Everything the stand-in billed is counted, and it stays under the limit.
      const spent = s.standin.requests.reduce((sum, r) => sum + costOf('claude-opus-4-1', r.usage!, DEFAULT_PRICES)!.total, 0);
      expect(usage.costUsd).toBeCloseTo(spent, 9);
      expect(usage.unpricedCalls).toBe(0);
      expect(usage.costUsd).toBeLessThanOrEqual(limit);
      // Shrunk before it stopped: some call went with less than the configured 4 096.
      expect(Math.min(...maxTokensSent(s))).toBeLessThan(4_096);
      expect(suspended.usage.exhaustion).toMatchObject({ limit: 'cost_usd', allowed: limit });
      expect(suspended.usage.exhaustion!.used + suspended.usage.exhaustion!.next!).toBeGreaterThan(limit);
      const log = await run.log();
      expect(log.find((e) => e.kind === 'session.turn_finished')).toMatchObject({ outcome: 'budget_exhausted' });
      expect(log.find((e) => e.kind === 'session.suspended')).toMatchObject({ reason: 'budget' });
    });
  });

  it('send() to a session suspended on its budget answers at once with the reason', async () => {
    const s = await sessionEnv(env, workflowBundle, {
      rules: [{ match: {}, reply: say('Forty tokens of wisdom.', { usage: billed(10, 40) }) }],
    });
    await s.run(async () => {
      const run = await s.start({ limits: { outputTokens: 40 } });
      await run.handle.executeUpdate(userMessageUpdate, { args: ['one'] });
      await run.waitForState((v) => v.status === 'suspended');
      const keel = await KeelClient.connect({ client: env.client, taskQueue: s.taskQueue });
      const session = keel.getSession(run.handle.workflowId);
      const answer = await session.send('two').then(
        () => 'answered',
        (error: unknown) => error,
      );
      expect(answer).toBeInstanceOf(Error);
      expect((answer as Error).message).toMatch(/suspended: the output_tokens budget is exhausted \(40 of 40 used\); raise_budget first/);
    });
  });
});
