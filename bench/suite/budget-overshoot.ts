// How far past a budget a session ends, per limit kind, against the bound README states:
// a call is fitted before it is sent to its worst case (its input estimated, all of it at
// the cache-write price, and `max_tokens` of output), so output never overshoots (the API
// bills no more than `max_tokens`), and input and USD only by the error of that input
// estimate: the last response's count plus what was appended since at 4 characters a token
// (the whole request so estimated on a first call). The error is measured here from the
// recorded requests, as Keel estimated them (activities/llm.ts), against what was billed.
import type Anthropic from '@anthropic-ai/sdk';
import { priceOf, DEFAULT_PRICES } from '../../activities/llm-pricing';
import { type BilledRequest, sessionCost, withoutBreakpoints } from './cost';

export type LimitKind = 'costUsd' | 'inputTokens' | 'outputTokens';

export interface Overshoot {
  limit: LimitKind;
  allowed: number;
  /** What the stand-in billed the session (USD at the table's prices, or tokens). */
  spent: number;
  /** (spent − allowed) / allowed, 0 when under. */
  overshoot: number;
  /** The bound README states, for this run: the largest underestimate of a call's input, as a share of the limit (0 for output). */
  bound: number;
  within: boolean;
  requests: number;
}

const totalInput = (u: BilledRequest['usage']) => u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens;
const quarter = (value: unknown) => Math.ceil(JSON.stringify(value).length / 4);

/** Input tokens each request was billed beyond Keel's estimate of it (0 where it estimated enough). */
export function inputUnderestimates(requests: readonly BilledRequest[]): number[] {
  return requests.map((r, i) => {
    const body = withoutBreakpoints(r.body);
    const messages = body.messages as Anthropic.MessageParam[];
    const previous = requests[i - 1];
    const before = previous === undefined ? null : (withoutBreakpoints(previous.body).messages as Anthropic.MessageParam[]);
    const estimate =
      previous !== undefined && before !== null && messages.length > before.length
        ? totalInput(previous.usage) + quarter(messages.slice(before.length))
        : quarter([body.system ?? '', body.tools ?? [], messages]);
    return Math.max(0, totalInput(r.usage) - estimate);
  });
}

export function overshoot(model: string, limit: LimitKind, allowed: number, requests: readonly BilledRequest[]): Overshoot {
  const cost = sessionCost(model, requests);
  const output = requests.reduce((n, r) => n + r.usage.output_tokens, 0);
  const spent = limit === 'costUsd' ? cost.usd : limit === 'inputTokens' ? cost.inputTokens : output;
  const worst = Math.max(0, ...inputUnderestimates(requests));
  const price = priceOf(model, DEFAULT_PRICES);
  const writeRate = price?.cacheWrite5m ?? (price?.input ?? 0) * 1.25;
  const boundUnits = limit === 'outputTokens' ? 0 : limit === 'inputTokens' ? worst : (worst * writeRate) / 1_000_000;
  const over = Math.max(0, spent - allowed) / allowed;
  const bound = boundUnits / allowed;
  return { limit, allowed, spent, overshoot: over, bound, within: over <= bound + 1e-12, requests: requests.length };
}
