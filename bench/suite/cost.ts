// What a session pays, from the requests the stand-in recorded: input tokens, the share read
// from the prompt cache, cache writes and dollars (activities/llm-pricing.ts). Besides what
// was measured live, two placements are computed from the same request bodies:
//
// - `main`: breakpoints only on the last tool and the last system block (Keel before
//   issue 26), replayed through a fresh stand-in cache (standin/usage.ts);
// - `best`: the least any placement could pay, whatever the breakpoint limit. Each request
//   reads the longest prefix an earlier request shares with it (it must have been
//   written then), writes what a later request will share with it beyond that, and pays
//   plain input for the rest; prefixes under the model's minimum are not cached.
//   Output is the same for every placement.
import { costOf, DEFAULT_PRICES } from '../../activities/llm-pricing';
import { minCacheableTokens } from '../../machines/model-limits';
import { PromptCacheSimulator, promptBlocks } from '../../standin/usage';
import { createHash } from 'node:crypto';

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

export interface BilledRequest {
  body: Json;
  usage: { input_tokens: number; output_tokens: number; cache_creation_input_tokens: number; cache_read_input_tokens: number; cache_creation?: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number } };
}

export interface SessionCost {
  requests: number;
  /** All input tokens: plain, written to the cache and read from it. */
  inputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** cacheReadTokens / inputTokens. */
  cacheReadShare: number;
  /** Input and output, in USD. */
  usd: number;
  inputUsd: number;
}

export function sessionCost(model: string, requests: readonly BilledRequest[]): SessionCost {
  let inputTokens = 0;
  let read = 0;
  let write = 0;
  let usd = 0;
  let outputUsd = 0;
  for (const { usage } of requests) {
    inputTokens += usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens;
    read += usage.cache_read_input_tokens;
    write += usage.cache_creation_input_tokens;
    const cost = costOf(model, usage, DEFAULT_PRICES);
    if (cost === null) throw new Error(`no price for ${model}`);
    usd += cost.total;
    outputUsd += cost.output;
  }
  return { requests: requests.length, inputTokens, cacheReadTokens: read, cacheWriteTokens: write, cacheReadShare: inputTokens === 0 ? 0 : read / inputTokens, usd, inputUsd: usd - outputUsd };
}

/** A deep copy without any `cache_control` (blocks, tools, system, top level). */
export function withoutBreakpoints<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v: unknown) => withoutBreakpoints(v)) as T;
  if (!isObject(value)) return value;
  return Object.fromEntries(Object.entries(value).filter(([k]) => k !== 'cache_control').map(([k, v]) => [k, withoutBreakpoints(v)])) as T;
}

/** Keel's placement before issue 26: the last tool and the last system block. */
export function mainPlacement(body: Json): Json {
  const bare = withoutBreakpoints(body);
  const mark = (list: unknown) => (Array.isArray(list) && list.length > 0 ? list.map((item: unknown, i) => (i === list.length - 1 && isObject(item) ? { ...item, cache_control: { type: 'ephemeral' } } : item)) : list);
  const system = typeof bare.system === 'string' ? [{ type: 'text', text: bare.system }] : bare.system;
  return { ...bare, ...(bare.tools !== undefined ? { tools: mark(bare.tools) } : {}), ...(system !== undefined ? { system: mark(system) } : {}) };
}

/** The usage each body would get from a fresh stand-in cache, output as recorded. */
export function replay(requests: readonly BilledRequest[], place: (body: Json) => Json): BilledRequest[] {
  const cache = new PromptCacheSimulator();
  return requests.map(({ body, usage }) => {
    const placed = place(body);
    const c = cache.apply(placed);
    const creation = c.written5m + c.written1h;
    return {
      body: placed,
      usage: {
        input_tokens: Math.max(1, c.total - creation - c.read),
        output_tokens: usage.output_tokens,
        cache_creation_input_tokens: creation,
        cache_read_input_tokens: c.read,
        cache_creation: { ephemeral_5m_input_tokens: c.written5m, ephemeral_1h_input_tokens: c.written1h },
      },
    };
  });
}

/** The cheapest billing of these requests any placement could reach (see the file comment). */
export function bestPlacement(model: string, requests: readonly BilledRequest[]): BilledRequest[] {
  const minimum = minCacheableTokens(model);
  const prefixes = requests.map(({ body }) => {
    const blocks = promptBlocks(withoutBreakpoints(body));
    let hash = createHash('sha256').update(model).digest('hex');
    let tokens = 0;
    return blocks.map((b) => {
      hash = createHash('sha256').update(hash).update(b.bytes).digest('hex');
      tokens += b.tokens;
      return { hash, tokens };
    });
  });
  /** Tokens of the longest prefix request `i` shares with any request in `others`. */
  const shared = (i: number, others: number[]) => {
    const seen = new Set(others.flatMap((j) => prefixes[j]!.map((p) => p.hash)));
    let best = 0;
    for (const p of prefixes[i]!) if (seen.has(p.hash)) best = p.tokens;
    return best >= minimum ? best : 0;
  };
  const all = requests.map((_, i) => i);
  return requests.map(({ body, usage }, i) => {
    const total = Math.max(1, prefixes[i]!.at(-1)?.tokens ?? 0);
    const read = shared(i, all.slice(0, i));
    const reused = shared(i, all.slice(i + 1));
    const write = Math.max(0, reused - read);
    return {
      body,
      usage: {
        input_tokens: Math.max(0, total - read - write),
        output_tokens: usage.output_tokens,
        cache_creation_input_tokens: write,
        cache_read_input_tokens: read,
        cache_creation: { ephemeral_5m_input_tokens: write, ephemeral_1h_input_tokens: 0 },
      },
    };
  });
}
