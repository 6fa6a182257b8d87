// What a model call costs, from the model table's prices (machines/models.ts) in USD per million tokens.
// A model the table does not list has an unknown cost (`null`), never zero: a budget
// must not believe an unpriced call was free. Override or extend the table with
// KEEL_MODEL_PRICES (a JSON or YAML file) or `createModelActivities({ prices })`.
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { canonicalModel, MODELS, modelPriceSchema, type ModelPrice } from '../machines/models';

export { modelPriceSchema, type ModelPrice };
export const priceTableSchema = z.record(z.string().min(1), modelPriceSchema);
export type PriceTable = z.infer<typeof priceTableSchema>;

/** The model table's prices (machines/models.ts, with its source and date), by canonical id. */
export const DEFAULT_PRICES: PriceTable = Object.fromEntries(Object.entries(MODELS).map(([id, spec]) => [id, spec.price]));

/**
 * The price of `model`: the table's entry for the id itself, else for the model it names
 * (an alias, or a dated snapshot, of a model in the table: `claude-sonnet-4-0`,
 * `claude-sonnet-4-20250514` and `claude-sonnet-4` are one model), else for the id a dated
 * id extends. Null: no price.
 */
export function priceOf(model: string, table: PriceTable): ModelPrice | null {
  const exact = table[model];
  if (exact) return exact;
  const canonical = canonicalModel(model);
  if (canonical !== null) {
    const spec = MODELS[canonical]!;
    for (const id of [canonical, spec.billedAs, ...spec.aliases]) if (table[id]) return table[id];
  }
  const alias = /^(.*)-\d{8}$/.exec(model)?.[1];
  return alias ? (table[alias] ?? null) : null;
}

/** The one line a run without a price for its model is refused with. */
export const noPriceMessage = (model: string): string => `no price for model ${model}: add it to the price table or KEEL_MODEL_PRICES`;

/**
 * The price a response is billed at: the billed id's when it names a priced model other
 * than the requested one (the API's word on what ran), else the requested model's — a
 * snapshot id the table does not spell is still the model that was asked for, never free.
 */
export function billedPrice(requested: string, billed: string, table: PriceTable): ModelPrice | null {
  const asked = priceOf(requested, table);
  if (billed === requested || canonicalModel(billed) === canonicalModel(requested)) return asked ?? priceOf(billed, table);
  return priceOf(billed, table) ?? asked;
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
  return price === null ? null : costAt(price, usage);
}

export function costAt(price: ModelPrice, usage: UsageForCost): ModelCost {
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
