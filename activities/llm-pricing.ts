// What a model call costs, from a per-model price table in USD per million tokens.
// A model the table does not list has an unknown cost (`null`), never zero: a budget
// must not believe an unpriced call was free. Override or extend the table with
// KEEL_MODEL_PRICES (a JSON or YAML file) or `createModelActivities({ prices })`.
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

export const modelPriceSchema = z
  .object({
    input: z.number().min(0),
    output: z.number().min(0),
    /** 5-minute cache writes; 1.25 × input when absent. */
    cacheWrite5m: z.number().min(0).optional(),
    /** 1-hour cache writes; 2 × input when absent. */
    cacheWrite1h: z.number().min(0).optional(),
    /** Cache hits and refreshes; 0.1 × input when absent. */
    cacheRead: z.number().min(0).optional(),
    /** USD per 1 000 web searches (the server tool); $10 when absent. Web fetches cost tokens only. */
    webSearchPer1k: z.number().min(0).optional(),
  })
  .strict();
export type ModelPrice = z.infer<typeof modelPriceSchema>;
export const priceTableSchema = z.record(z.string().min(1), modelPriceSchema);
export type PriceTable = z.infer<typeof priceTableSchema>;

const opus45: ModelPrice = { input: 5, output: 25, cacheWrite5m: 6.25, cacheWrite1h: 10, cacheRead: 0.5 };
const opus4: ModelPrice = { input: 15, output: 75, cacheWrite5m: 18.75, cacheWrite1h: 30, cacheRead: 1.5 };
const sonnet4: ModelPrice = { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 };

/** From platform.claude.com/docs/en/about-claude/pricing; models not listed cost "unknown". */
export const DEFAULT_PRICES: PriceTable = {
  'claude-fable-5-1': { input: 10, output: 50, cacheWrite5m: 12.5, cacheWrite1h: 20, cacheRead: 0.25 },
  'claude-mythos-5-1': { input: 10, output: 50, cacheWrite5m: 12.5, cacheWrite1h: 20, cacheRead: 0.25 },
  'claude-fable-5': { input: 10, output: 50, cacheWrite5m: 12.5, cacheWrite1h: 20, cacheRead: 1 },
  'claude-mythos-5': { input: 10, output: 50, cacheWrite5m: 12.5, cacheWrite1h: 20, cacheRead: 1 },
  'claude-opus-5': opus45,
  'claude-opus-4-8': opus45,
  'claude-opus-4-7': opus45,
  'claude-opus-4-6': opus45,
  'claude-opus-4-5': opus45,
  'claude-opus-4-1': opus4,
  'claude-opus-4-0': opus4,
  'claude-sonnet-4-6': sonnet4,
  'claude-sonnet-4-5': sonnet4,
  'claude-sonnet-4-0': sonnet4,
  'claude-haiku-4-5': { input: 1, output: 5, cacheWrite5m: 1.25, cacheWrite1h: 2, cacheRead: 0.1 },
};

/** The price of `model`: an exact entry, or the entry its dated snapshot id (`…-YYYYMMDD`) extends. */
export function priceOf(model: string, table: PriceTable): ModelPrice | null {
  const exact = table[model];
  if (exact) return exact;
  const alias = /^(.*)-\d{8}$/.exec(model)?.[1];
  return alias ? (table[alias] ?? null) : null;
}

export interface UsageForCost {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation?: { ephemeral_5m_input_tokens?: number | null; ephemeral_1h_input_tokens?: number | null } | null;
  server_tool_use?: { web_search_requests?: number | null } | null;
}

export interface ModelCost {
  currency: 'USD';
  total: number;
  input: number;
  output: number;
  cacheWrite: number;
  cacheRead: number;
  /** Server tools billed per use (web search). */
  serverTools: number;
}

const perToken = (pricePerMTok: number, tokens: number) => (pricePerMTok * tokens) / 1_000_000;

export function costOf(model: string, usage: UsageForCost, table: PriceTable): ModelCost | null {
  const price = priceOf(model, table);
  if (!price) return null;
  const written = usage.cache_creation_input_tokens ?? 0;
  const written1h = usage.cache_creation?.ephemeral_1h_input_tokens ?? 0;
  // Without the split, every cache write is billed at the 5-minute rate (the API default).
  const written5m = usage.cache_creation ? (usage.cache_creation.ephemeral_5m_input_tokens ?? 0) : written;
  const input = perToken(price.input, usage.input_tokens);
  const output = perToken(price.output, usage.output_tokens);
  const cacheWrite =
    perToken(price.cacheWrite5m ?? price.input * 1.25, written5m) + perToken(price.cacheWrite1h ?? price.input * 2, written1h);
  const cacheRead = perToken(price.cacheRead ?? price.input * 0.1, usage.cache_read_input_tokens ?? 0);
  const serverTools = ((price.webSearchPer1k ?? 10) * (usage.server_tool_use?.web_search_requests ?? 0)) / 1_000;
  return { currency: 'USD', total: input + output + cacheWrite + cacheRead + serverTools, input, output, cacheWrite, cacheRead, serverTools };
}

/** The default table, extended and overridden by the file KEEL_MODEL_PRICES names. */
export function loadPriceTable(env: NodeJS.ProcessEnv = process.env): PriceTable {
  const file = env.KEEL_MODEL_PRICES;
  if (!file) return DEFAULT_PRICES;
  let parsed: unknown;
  try {
    parsed = parseYaml(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new Error(`KEEL_MODEL_PRICES=${file}: cannot read a JSON or YAML price table: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const result = priceTableSchema.safeParse(parsed);
  if (!result.success) {
    throw new Error(`KEEL_MODEL_PRICES=${file} is not a price table:\n${z.prettifyError(result.error)}`);
  }
  return { ...DEFAULT_PRICES, ...result.data };
}
