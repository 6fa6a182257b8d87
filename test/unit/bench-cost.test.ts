// The cost bench's yardsticks (bench/suite/cost.ts): the best placement a session could
// reach, and the placement Keel had before issue 26, computed from request bodies.
import { describe, expect, it } from 'vitest';
import { bestPlacement, mainPlacement, replay, sessionCost, type BilledRequest } from '../../bench/suite/cost';

const MODEL = 'claude-sonnet-4-6';
const long = (seed: string, tokens: number) => `${seed} `.repeat(tokens * 2).slice(0, tokens * 4);
const request = (messages: unknown[]): BilledRequest => ({
  body: { model: MODEL, system: [{ type: 'text', text: long('system', 1_200) }], messages },
  usage: { input_tokens: 0, output_tokens: 10, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
});
const user = (text: string) => ({ role: 'user', content: [{ type: 'text', text }] });
const assistant = (text: string) => ({ role: 'assistant', content: [{ type: 'text', text }] });

describe('cost yardsticks', () => {
  const session = [
    request([user(long('a', 2_000))]),
    request([user(long('a', 2_000)), assistant('ok'), user(long('b', 3_000))]),
    request([user(long('a', 2_000)), assistant('ok'), user(long('b', 3_000)), assistant('fine'), user('bye')]),
  ];

  it('best: each request reads all an earlier one shares with it and writes only what a later one will read', () => {
    const best = bestPlacement(MODEL, session).map((r) => r.usage);
    expect(best[0]!.cache_read_input_tokens).toBe(0);
    expect(best[0]!.input_tokens).toBe(0); // all of it is read later: written
    expect(best[1]!.cache_read_input_tokens).toBe(best[0]!.cache_creation_input_tokens);
    // The last request writes nothing: nobody reads after it.
    expect(best[2]!.cache_creation_input_tokens).toBe(0);
    expect(best[2]!.input_tokens).toBeLessThan(30);
  });

  it("main's placement reads only tools and system, and costs more than the best", () => {
    const main = replay(session, mainPlacement);
    expect(main[1]!.usage.cache_read_input_tokens).toBe(main[0]!.usage.cache_creation_input_tokens);
    expect(main[1]!.usage.cache_read_input_tokens).toBeLessThan(1_300);
    expect(sessionCost(MODEL, main).usd).toBeGreaterThan(sessionCost(MODEL, bestPlacement(MODEL, session)).usd * 1.5);
  });
});
