// The stand-in's prompt cache bills as the API does: a prefix (tools → system → messages)
// matched by exact bytes up to a breakpoint, nothing cached under the model's minimum,
// a 20-block lookback, 5-minute and 1-hour TTLs, and the usage fields that say so.
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Standin, startStandin } from '../../standin/server';
import { PromptCacheSimulator } from '../../standin/usage';

type Json = Record<string, unknown>;
const EPH = { type: 'ephemeral' };
const H1 = { type: 'ephemeral', ttl: '1h' };
/** About `tokens` tokens of text (4 characters a token). */
const text = (tokens: number, seed = 'x') => `${seed} `.repeat(tokens * 2).slice(0, tokens * 4);
const sys = (tokens: number, control: Json | null = EPH, seed = 's') => [{ type: 'text', text: text(tokens, seed), ...(control ? { cache_control: control } : {}) }];
const user = (t: string, control: Json | null = null) => ({ role: 'user', content: [{ type: 'text', text: t, ...(control ? { cache_control: control } : {}) }] });
const assistant = (t: string) => ({ role: 'assistant', content: [{ type: 'text', text: t }] });

function clock() {
  let now = 1_000_000;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe('prompt cache simulator', () => {
  it('caches nothing below the model minimum: 1 024 tokens for Sonnet 4.6, 4 096 for Haiku 4.5', () => {
    const cache = new PromptCacheSimulator();
    const small = { model: 'claude-sonnet-4-6', system: sys(900), messages: [user('hi')] };
    expect(cache.apply(small)).toMatchObject({ read: 0, written5m: 0 });
    expect(cache.apply(small)).toMatchObject({ read: 0, written5m: 0 });
    const large = { model: 'claude-sonnet-4-6', system: sys(1_500), messages: [user('hi')] };
    expect(cache.apply(large).written5m).toBeGreaterThanOrEqual(1_500);
    expect(cache.apply(large).read).toBeGreaterThanOrEqual(1_500);
    const haiku = { model: 'claude-haiku-4-5', system: sys(3_000), messages: [user('hi')] };
    cache.apply(haiku);
    expect(cache.apply(haiku)).toMatchObject({ read: 0, written5m: 0 });
  });

  it('matches by exact bytes: one changed character in the system prompt misses, and the model is part of the key', () => {
    const cache = new PromptCacheSimulator();
    const body = { model: 'claude-sonnet-4-6', system: sys(2_000), messages: [user('hi')] };
    cache.apply(body);
    const changed = { ...body, system: [{ ...body.system[0]!, text: `${body.system[0]!.text.slice(0, -1)}!` }] };
    expect(cache.apply(changed).read).toBe(0);
    expect(cache.apply({ ...body, model: 'claude-sonnet-4-5' }).read).toBe(0);
    // The marker itself is not part of the prefix: moving it elsewhere still reads what it wrote.
    const again = cache.apply({ ...body, system: sys(2_000, null), messages: [user('hi', EPH)] });
    expect(again.read).toBeGreaterThanOrEqual(2_000);
  });

  it('caches the conversation only when a breakpoint is on it: tools + system alone leave every message uncached', () => {
    const cache = new PromptCacheSimulator();
    const history = [user(text(3_000, 'a')), assistant('ok'), user('next')];
    const systemOnly = { model: 'claude-sonnet-4-6', system: sys(1_200), messages: history };
    cache.apply(systemOnly);
    const second = cache.apply(systemOnly);
    expect(second.read).toBeLessThan(1_300);
    expect(second.total - second.read).toBeGreaterThan(3_000);

    const rolling = (messages: Json[]) => ({ model: 'claude-sonnet-4-6', system: sys(1_200), messages: messages.map((m, i) => (i === messages.length - 1 ? { ...m, content: [{ ...(m.content as Json[])[0], cache_control: EPH }] } : m)) });
    const first = cache.apply(rolling(history));
    expect(first.written5m).toBeGreaterThan(3_000);
    const next = cache.apply(rolling([...history, assistant('done'), user('and now?')]));
    expect(next.read).toBe(first.total);
  });

  it('looks back at most 20 blocks from a breakpoint for an earlier entry', () => {
    const cache = new PromptCacheSimulator();
    const base = [user(text(1_500, 'b'), EPH)];
    const first = cache.apply({ model: 'claude-sonnet-4-6', messages: base });
    const grow = (blocks: number) => [
      user(text(1_500, 'b')),
      { role: 'assistant', content: Array.from({ length: blocks - 1 }, (_, i) => ({ type: 'text', text: `step ${i}` })) },
      { role: 'user', content: [{ type: 'text', text: 'last', cache_control: EPH }] },
    ];
    // 20 blocks from the breakpoint back to the entry (inclusive): found.
    expect(cache.apply({ model: 'claude-sonnet-4-6', messages: grow(19) }).read).toBe(first.total);
    const far = new PromptCacheSimulator();
    far.apply({ model: 'claude-sonnet-4-6', messages: base });
    expect(far.apply({ model: 'claude-sonnet-4-6', messages: grow(25) }).read).toBe(0);
    // A second breakpoint where the last call ended finds it again.
    const tail = new PromptCacheSimulator();
    tail.apply({ model: 'claude-sonnet-4-6', messages: base });
    const withTail = grow(25);
    withTail[0] = user(text(1_500, 'b'), EPH);
    const read = tail.apply({ model: 'claude-sonnet-4-6', messages: withTail });
    expect(read.read).toBe(first.total);
    expect(read.written5m).toBe(read.total - first.total);
  });

  it('expires 5-minute entries after 5 minutes without use, keeps 1-hour ones for the hour, and a read renews', () => {
    const c = clock();
    const cache = new PromptCacheSimulator(c.now);
    const five = { model: 'claude-sonnet-4-6', system: sys(2_000, EPH, 'five'), messages: [user('hi')] };
    const hour = { model: 'claude-sonnet-4-6', system: sys(2_000, H1, 'hour'), messages: [user('hi')] };
    expect(cache.apply(five).written5m).toBeGreaterThan(0);
    const written1h = cache.apply(hour);
    expect(written1h.written1h).toBeGreaterThan(0);
    expect(written1h.written5m).toBe(0);
    c.advance(4 * 60_000);
    expect(cache.apply(five).read).toBeGreaterThan(0); // renews for 5 more minutes
    c.advance(4 * 60_000);
    expect(cache.apply(five).read).toBeGreaterThan(0);
    c.advance(5 * 60_000 + 1);
    expect(cache.apply(five).read).toBe(0);
    expect(cache.apply(hour).read).toBeGreaterThan(0);
    c.advance(61 * 60_000);
    expect(cache.apply(hour).read).toBe(0);
  });

  it('applies a top-level cache_control (automatic caching) to the last cacheable block', () => {
    const cache = new PromptCacheSimulator();
    const messages = [user(text(2_000, 'auto')), assistant('ok'), user('more')];
    const first = cache.apply({ model: 'claude-sonnet-4-6', cache_control: EPH, messages });
    expect(first.written5m).toBe(first.total);
    expect(cache.apply({ model: 'claude-sonnet-4-6', cache_control: EPH, messages: [...messages, assistant('yes'), user('end')] }).read).toBe(first.total);
  });
});

describe('usage through the SDK', () => {
  let standin: Standin;
  let client: Anthropic;
  beforeAll(async () => {
    standin = await startStandin({ scenario: { rules: [{ reply: { content: [{ type: 'text', text: 'fine' }] } }] } });
    client = new Anthropic({ apiKey: 'sk-ant-unit', baseURL: standin.url, maxRetries: 0 });
  });
  afterAll(async () => standin?.close());

  it('reports cache writes by TTL in cache_creation, and reads in cache_read_input_tokens', async () => {
    const system: Anthropic.TextBlockParam[] = [
      { type: 'text', text: text(1_500, 'long'), cache_control: { type: 'ephemeral', ttl: '1h' } },
      { type: 'text', text: text(600, 'short'), cache_control: { type: 'ephemeral' } },
    ];
    const ask = () => client.messages.create({ model: 'claude-sonnet-4-6', max_tokens: 100, system, messages: [{ role: 'user', content: 'hello' }] });
    const first = (await ask()).usage;
    expect(first.cache_read_input_tokens).toBe(0);
    expect(first.cache_creation?.ephemeral_1h_input_tokens).toBeGreaterThanOrEqual(1_500);
    expect(first.cache_creation?.ephemeral_5m_input_tokens).toBeGreaterThanOrEqual(600);
    expect(first.cache_creation_input_tokens).toBe(first.cache_creation!.ephemeral_1h_input_tokens + first.cache_creation!.ephemeral_5m_input_tokens);
    const second = (await ask()).usage;
    expect(second.cache_read_input_tokens).toBe(first.cache_creation_input_tokens);
    expect(second.cache_creation_input_tokens).toBe(0);
    expect(second.input_tokens).toBe(first.input_tokens);
  });
});
