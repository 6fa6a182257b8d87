// Paying for each token once, and counting every one that is paid: end to end through a
// real worker, the real SDK and the stand-in (which caches and bills as the API does).
// The conversation is read from the cache; an empty text block never goes back; server
// tool blocks survive a pause_turn and web searches are priced; a refused turn is as if
// not sent; compaction is priced and starts from the API's own token count; thinking modes.
import { describe, expect, it } from 'vitest';
import { costOf, DEFAULT_PRICES } from '../../activities/llm-pricing';
import { conversationProblems, type Message } from '../../machines/index';
import { userMessageUpdate } from '../../workflows/definitions';
import { say, sessionEnv, use } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();

type Body = { messages: Message[]; system?: unknown; thinking?: unknown; model: string };
const bodies = (s: { standin: { requests: { body: unknown }[] } }) => s.standin.requests.map((r) => r.body as Body);
const FAST = { retryBackoffMs: [50, 50, 50] };
const MODEL = 'claude-sonnet-4-6';
/** What the stand-in billed, priced by the default table. */
const billedUsd = (s: { standin: { requests: { usage: Parameters<typeof costOf>[1] | null }[] } }) =>
  s.standin.requests.reduce((sum, r) => sum + (r.usage ? (costOf(MODEL, r.usage, DEFAULT_PRICES)?.total ?? Number.NaN) : 0), 0);

describe('model billing', () => {
  it('reads the conversation from the cache: after the first call, every call reads what the one before wrote', async () => {
    const big = 'line of a long file with enough text to matter\n'.repeat(400);
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        { match: { lastUserContains: 'read it', hasToolResults: false }, reply: use('read_file', { path: 'big.txt' }, undefined, 'Reading.') },
        { match: { hasToolResults: true }, reply: say('Read.') },
        { match: { lastUserContains: 'again' }, reply: say('Still here.') },
      ],
    });
    await import('node:fs/promises').then((fs) => fs.writeFile(`${s.workspace}/big.txt`, big));
    await s.run(async () => {
      const run = await s.start(FAST);
      await run.handle.executeUpdate(userMessageUpdate, { args: ['read it'] });
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 1);
      await run.handle.executeUpdate(userMessageUpdate, { args: ['again'] });
      const state = await run.waitForState((v) => v.status === 'active' && v.session.turns === 2);
      const usages = s.standin.requests.map((r) => r.usage!);
      expect(usages).toHaveLength(3);
      // Each call reads everything the previous call read or wrote (its whole prompt): the file is paid in full once.
      for (let i = 1; i < usages.length; i++) {
        const previous = usages[i - 1]!;
        expect(usages[i]!.cache_read_input_tokens).toBe(previous.cache_read_input_tokens + previous.cache_creation_input_tokens);
        expect(usages[i]!.input_tokens).toBeLessThan(5);
      }
      const total = usages.reduce((n, u) => n + u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens, 0);
      // The session's usage counts all input (cached included) and the dollars billed.
      expect(state.usage.usage.inputTokens).toBe(total);
      expect(state.usage.usage.costUsd).toBeCloseTo(billedUsd(s), 9);
    });
  });

  it('drops an empty text block the model sent before a tool_use, so the next request is valid', async () => {
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        { match: { hasToolResults: false }, reply: { content: [{ type: 'text', text: '' }, { type: 'tool_use', name: 'list_dir', input: { path: '.' } }] } },
        { match: { hasToolResults: true }, reply: say('Listed.') },
      ],
    });
    await s.run(async () => {
      const run = await s.start(FAST);
      await run.handle.executeUpdate(userMessageUpdate, { args: ['list the files'] });
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 1);
      expect(s.standin.requests.map((r) => r.status)).toEqual([200, 200]);
      const sent = bodies(s)[1]!.messages;
      expect(sent[1]!.content.map((b) => b.type)).toEqual(['tool_use']);
      expect((await run.log()).find((e) => e.kind === 'turn.completed')).toMatchObject({ finalOutput: 'Listed.', reason: 'end_turn' });
    });
  });

  it('pause_turn keeps the server tool blocks in the continuation, and web searches are priced', async () => {
    const results = [{ type: 'web_search_result', url: 'https://example.com/', title: 'Example', encrypted_content: 'EqkCCk', page_age: null }];
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        {
          match: { request: 1 },
          reply: {
            content: [
              { type: 'server_tool_use', id: 'srvtoolu_01A', name: 'web_search', input: { query: 'keel temporal' } },
              { type: 'web_search_tool_result', content: results },
              { type: 'text', text: 'Searching…' },
            ],
            stopReason: 'pause_turn',
          },
        },
        { match: { request: 2 }, reply: say('Found it.') },
      ],
    });
    await s.run(async () => {
      const run = await s.start(FAST);
      await run.handle.executeUpdate(userMessageUpdate, { args: ['find it'] });
      const state = await run.waitForState((v) => v.status === 'active' && v.session.turns === 1);
      const paused = bodies(s)[1]!.messages.at(-1)!;
      expect(paused.role).toBe('assistant');
      expect(paused.content.map((b) => b.type)).toEqual(['server_tool_use', 'web_search_tool_result', 'text']);
      expect(paused.content[1]).toMatchObject({ type: 'web_search_tool_result', tool_use_id: 'srvtoolu_01A', content: results });
      expect(s.standin.requests[0]!.usage?.server_tool_use?.web_search_requests).toBe(1);
      // $10 per 1 000 searches is in the session's cost.
      expect(state.usage.usage.costUsd).toBeCloseTo(billedUsd(s), 9);
      expect(billedUsd(s) - (costOf(MODEL, { ...s.standin.requests[0]!.usage!, server_tool_use: null }, DEFAULT_PRICES)!.total + costOf(MODEL, s.standin.requests[1]!.usage!, DEFAULT_PRICES)!.total)).toBeCloseTo(0.01, 9);
    });
  });

  it('a refused turn leaves the conversation as if it had not been sent; its usage still counts', async () => {
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        { match: { lastUserContains: 'forbidden' }, times: 1, reply: { content: [], stopReason: 'refusal', stopDetails: { category: 'cyber', explanation: 'no' } } },
        { match: { lastUserContains: 'something else' }, reply: say('Sure.') },
      ],
    });
    await s.run(async () => {
      const run = await s.start(FAST);
      await run.handle.executeUpdate(userMessageUpdate, { args: ['do the forbidden thing'] });
      const refused = await run.waitForState((v) => v.status === 'active' && v.session.turns === 1);
      expect(refused.usage.usage.inputTokens).toBeGreaterThan(0);
      await run.handle.executeUpdate(userMessageUpdate, { args: ['something else then'] });
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 2);
      const sent = bodies(s).at(-1)!.messages;
      expect(sent).toHaveLength(1);
      expect(JSON.stringify(sent)).not.toContain('forbidden');
      expect(conversationProblems(sent)).toEqual([]);
    });
  });

  it('compacts before the next call when the last response said the conversation is near the window, and prices the summary', async () => {
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        { name: 'summary', match: { lastUserContains: 'the conversation is being compacted' }, reply: say('Earlier: the user asked twice.') },
        // The API counts 190 000 input tokens (the stand-in's own estimate is tiny): over 80 % of Sonnet 4.5's 200 000.
        { match: { lastUserContains: 'second' }, times: 1, reply: { ...say('Second answer.'), usage: { input_tokens: 190_000 } } },
        { match: { lastUserContains: 'first' }, reply: say('First answer.') },
        { match: { lastUserContains: 'third' }, reply: say('Third answer.') },
      ],
    });
    await s.run(async () => {
      const run = await s.start({ ...FAST, model: 'claude-sonnet-4-5' });
      let state = null as Awaited<ReturnType<typeof run.waitForState>> | null;
      for (const [i, text] of ['first', 'second', 'third'].entries()) {
        await run.handle.executeUpdate(userMessageUpdate, { args: [text] });
        state = await run.waitForState((v) => v.status === 'active' && v.session.turns === i + 1);
      }
      const rules = s.standin.requests.map((r) => r.rule);
      expect(rules).toEqual(['rule 3', 'rule 2', 'summary', 'rule 4']);
      expect((await run.log()).some((e) => e.kind === 'conversation.compacted')).toBe(true);
      // The summary call is in the dollars, not only in the tokens.
      expect(state?.usage.usage.costUsd).toBeCloseTo(billedUsd(s), 9);
    });
  });

  it('the compaction summary continues the cached conversation: its prefix is read from cache, and the session pays accordingly', async () => {
    const big = 'line of a long file with enough text to matter\n'.repeat(400);
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        { name: 'summary', match: { lastUserContains: 'the conversation is being compacted' }, reply: say('Earlier: big.txt was read.') },
        { match: { lastUserContains: 'read it', hasToolResults: false }, reply: use('read_file', { path: 'big.txt' }, undefined, 'Reading.') },
        { match: { hasToolResults: true }, reply: say('Read.') },
        // The API counts 190 000 input tokens: over 80 % of the window, so the next call compacts first.
        { match: { lastUserContains: 'second' }, times: 1, reply: { ...say('Second answer.'), usage: { input_tokens: 190_000 } } },
        { match: { lastUserContains: 'third' }, reply: say('Third answer.') },
      ],
    });
    await import('node:fs/promises').then((fs) => fs.writeFile(`${s.workspace}/big.txt`, big));
    await s.run(async () => {
      const run = await s.start({ ...FAST, model: 'claude-sonnet-4-5' });
      let state = null as Awaited<ReturnType<typeof run.waitForState>> | null;
      for (const [i, text] of ['read it', 'second', 'third'].entries()) {
        await run.handle.executeUpdate(userMessageUpdate, { args: [text] });
        state = await run.waitForState((v) => v.status === 'active' && v.session.turns === i + 1);
      }
      expect(s.standin.requests.map((r) => r.rule)).toEqual(['rule 2', 'rule 3', 'rule 4', 'summary', 'rule 5']);
      const [, , second, summary] = s.standin.requests;
      // The same request shape as the turn's: its system, tools and breakpoints, one text block more.
      const turnBody = second!.body as Body & { tools?: unknown };
      const summaryBody = summary!.body as Body & { tools?: unknown };
      expect(summaryBody.system).toEqual(turnBody.system);
      expect(summaryBody.tools).toEqual(turnBody.tools);
      // Its conversation begins with the turn's, byte for byte (breakpoints aside: the rolling one moves).
      const bare = (m: unknown) => JSON.parse(JSON.stringify(m, (key, value: unknown) => (key === 'cache_control' ? undefined : value))) as unknown;
      expect(bare(summaryBody.messages.slice(0, turnBody.messages.length))).toEqual(bare(turnBody.messages));
      // Everything the turn's last call read or wrote is read back (the file, paid in full once).
      const u = summary!.usage!;
      expect(u.cache_read_input_tokens).toBeGreaterThanOrEqual(second!.usage!.cache_read_input_tokens + second!.usage!.cache_creation_input_tokens);
      const all = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;
      expect(u.cache_read_input_tokens / all).toBeGreaterThan(0.8);
      // So the summary costs a fraction of the same input sent uncached (the old way: ~1×).
      const billed = costOf('claude-sonnet-4-5', u, DEFAULT_PRICES)!.total;
      const uncached = costOf('claude-sonnet-4-5', { input_tokens: all, output_tokens: u.output_tokens, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 }, DEFAULT_PRICES)!.total;
      expect(billed / uncached).toBeLessThan(0.35);
      // And the session counts exactly what was billed, the summary call included.
      const billedAll = s.standin.requests.reduce((sum, r) => sum + costOf('claude-sonnet-4-5', r.usage!, DEFAULT_PRICES)!.total, 0);
      expect(state?.usage.usage.costUsd).toBeCloseTo(billedAll, 9);
    });
  });

  it('sends thinking as configured: adaptive, or a budget with the interleaved-thinking header', async () => {
    const s = await sessionEnv(env, workflowBundle, { rules: [{ reply: say('Thought.') }] });
    await s.run(async () => {
      const adaptive = await s.start({ ...FAST, thinking: { adaptive: true } });
      await adaptive.handle.executeUpdate(userMessageUpdate, { args: ['think'] });
      await adaptive.waitForState((v) => v.status === 'active' && v.session.turns === 1);
      expect(bodies(s)[0]!.thinking).toEqual({ type: 'adaptive' });
      const interleaved = await s.start({ ...FAST, thinking: { budgetTokens: 2_048, interleaved: true } });
      await interleaved.handle.executeUpdate(userMessageUpdate, { args: ['think between tools'] });
      await interleaved.waitForState((v) => v.status === 'active' && v.session.turns === 1);
      expect(bodies(s)[1]!.thinking).toEqual({ type: 'enabled', budget_tokens: 2_048 });
      expect(s.standin.requests[1]!.headers['anthropic-beta']).toContain('interleaved-thinking-2025-05-14');
    });
  });
});
