// One table of what Keel knows about each model: its price and its limits. The cost model,
// the budget's pre-call ceiling, the turn's output limits, the planner and critic (forced
// tool choice) and the stand-in all read it, so they cannot disagree. Keyed by the
// canonical id; a request may name a model by an alias (`claude-sonnet-4-0`) or a dated
// snapshot (`claude-sonnet-4-20250514`), and the API bills under the snapshot id: all
// three resolve to the same entry.
import { z } from 'zod';
import { lazySchema } from './lazy-schema';

// Built on first use: the workflow bundle shares this module between workflows, frozen
// (machines/lazy-schema.ts says why a frozen schema cannot parse).
export const modelPriceSchema = lazySchema(() =>
  z
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
    .strict(),
);
export type ModelPrice = z.infer<typeof modelPriceSchema>;

export interface ModelSpec {
  /** The id the API answers with for this model: its dated snapshot (models before the 4.6 generation), else its own id. */
  readonly billedAs: string;
  /** Other ids a request may name it by. */
  readonly aliases: readonly string[];
  /** USD per million tokens. */
  readonly price: ModelPrice;
  /** Input + output tokens a request must fit in. */
  readonly contextWindow: number;
  /** The largest `max_tokens` the API takes. */
  readonly maxOutput: number;
  /** `thinking: {type: 'enabled', budget_tokens}` (manual) and `{type: 'adaptive'}`: which the API takes. */
  readonly thinking: { readonly manual: boolean; readonly adaptive: boolean };
  /** Whether `tool_choice` may force a tool (`any` / `tool`): not where thinking is always on. */
  readonly forcedToolChoice: boolean;
  /** The shortest prefix the API caches (a shorter one is processed uncached, silently). */
  readonly minCacheableTokens: number;
}

/** Where the figures come from and when they were read: a stale table is a wrong bill. */
export const MODEL_TABLE_SOURCE = {
  prices: 'https://platform.claude.com/docs/en/about-claude/pricing',
  limits: 'https://platform.claude.com/docs/en/about-claude/models/overview',
  checked: '2026-11-28',
} as const;

const opus45: ModelPrice = { input: 5, output: 25, cacheWrite5m: 6.25, cacheWrite1h: 10, cacheRead: 0.5 };
const opus4: ModelPrice = { input: 15, output: 75, cacheWrite5m: 18.75, cacheWrite1h: 30, cacheRead: 1.5 };
const sonnet4: ModelPrice = { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 };
const sonnet5: ModelPrice = { input: 2, output: 10, cacheWrite5m: 2.5, cacheWrite1h: 4, cacheRead: 0.2 };

const K200 = 200_000;
const M1 = 1_000_000;
const MANUAL_ONLY = { manual: true, adaptive: false } as const;
const BOTH = { manual: true, adaptive: true } as const;
const ADAPTIVE_ONLY = { manual: false, adaptive: true } as const;

const spec = (billedAs: string, s: Omit<ModelSpec, 'billedAs' | 'aliases'> & { aliases?: readonly string[] }): ModelSpec => ({ billedAs, aliases: [], ...s });

/** Every model Keel accepts, by canonical id. */
export const MODELS: Readonly<Record<string, ModelSpec>> = {
  // Thinking always on: no manual budget, no forced tool.
  'claude-fable-5-1': spec('claude-fable-5-1', { price: { input: 10, output: 50, cacheWrite5m: 12.5, cacheWrite1h: 20, cacheRead: 0.25 }, contextWindow: M1, maxOutput: 128_000, thinking: ADAPTIVE_ONLY, forcedToolChoice: false, minCacheableTokens: 512 }),
  'claude-mythos-5-1': spec('claude-mythos-5-1', { price: { input: 10, output: 50, cacheWrite5m: 12.5, cacheWrite1h: 20, cacheRead: 0.25 }, contextWindow: M1, maxOutput: 128_000, thinking: ADAPTIVE_ONLY, forcedToolChoice: false, minCacheableTokens: 512 }),
  'claude-fable-5': spec('claude-fable-5', { price: { input: 10, output: 50, cacheWrite5m: 12.5, cacheWrite1h: 20, cacheRead: 1 }, contextWindow: M1, maxOutput: 128_000, thinking: ADAPTIVE_ONLY, forcedToolChoice: false, minCacheableTokens: 512 }),
  'claude-mythos-5': spec('claude-mythos-5', { price: { input: 10, output: 50, cacheWrite5m: 12.5, cacheWrite1h: 20, cacheRead: 1 }, contextWindow: M1, maxOutput: 128_000, thinking: ADAPTIVE_ONLY, forcedToolChoice: false, minCacheableTokens: 512 }),
  'claude-opus-5-5': spec('claude-opus-5-5', { price: { input: 4, output: 20, cacheWrite5m: 5, cacheWrite1h: 8, cacheRead: 0.2 }, contextWindow: M1, maxOutput: 128_000, thinking: ADAPTIVE_ONLY, forcedToolChoice: false, minCacheableTokens: 512 }),
  // Thinking on by default (Opus 5): a forced tool is refused as with thinking on.
  'claude-opus-5': spec('claude-opus-5', { price: opus45, contextWindow: M1, maxOutput: 128_000, thinking: ADAPTIVE_ONLY, forcedToolChoice: false, minCacheableTokens: 512 }),
  'claude-sonnet-5-5': spec('claude-sonnet-5-5', { price: sonnet5, contextWindow: M1, maxOutput: 128_000, thinking: ADAPTIVE_ONLY, forcedToolChoice: true, minCacheableTokens: 1_024 }),
  'claude-sonnet-5': spec('claude-sonnet-5', { price: sonnet5, contextWindow: M1, maxOutput: 128_000, thinking: ADAPTIVE_ONLY, forcedToolChoice: true, minCacheableTokens: 1_024 }),
  'claude-opus-4-8': spec('claude-opus-4-8', { price: opus45, contextWindow: M1, maxOutput: 128_000, thinking: ADAPTIVE_ONLY, forcedToolChoice: true, minCacheableTokens: 1_024 }),
  'claude-opus-4-7': spec('claude-opus-4-7', { price: opus45, contextWindow: M1, maxOutput: 128_000, thinking: ADAPTIVE_ONLY, forcedToolChoice: true, minCacheableTokens: 2_048 }),
  'claude-opus-4-6': spec('claude-opus-4-6', { price: opus45, contextWindow: M1, maxOutput: 128_000, thinking: BOTH, forcedToolChoice: true, minCacheableTokens: 4_096 }),
  'claude-opus-4-5': spec('claude-opus-4-5-20251101', { price: opus45, contextWindow: K200, maxOutput: 64_000, thinking: MANUAL_ONLY, forcedToolChoice: true, minCacheableTokens: 4_096 }),
  'claude-opus-4-1': spec('claude-opus-4-1-20250805', { price: opus4, contextWindow: K200, maxOutput: 32_000, thinking: MANUAL_ONLY, forcedToolChoice: true, minCacheableTokens: 1_024 }),
  'claude-opus-4-0': spec('claude-opus-4-20250514', { aliases: ['claude-opus-4'], price: opus4, contextWindow: K200, maxOutput: 32_000, thinking: MANUAL_ONLY, forcedToolChoice: true, minCacheableTokens: 1_024 }),
  'claude-sonnet-4-6': spec('claude-sonnet-4-6', { price: sonnet4, contextWindow: M1, maxOutput: 128_000, thinking: BOTH, forcedToolChoice: true, minCacheableTokens: 1_024 }),
  'claude-sonnet-4-5': spec('claude-sonnet-4-5-20250929', { price: sonnet4, contextWindow: K200, maxOutput: 64_000, thinking: MANUAL_ONLY, forcedToolChoice: true, minCacheableTokens: 1_024 }),
  'claude-sonnet-4-0': spec('claude-sonnet-4-20250514', { aliases: ['claude-sonnet-4'], price: sonnet4, contextWindow: K200, maxOutput: 64_000, thinking: MANUAL_ONLY, forcedToolChoice: true, minCacheableTokens: 1_024 }),
  'claude-haiku-4-5': spec('claude-haiku-4-5-20251001', { price: { input: 1, output: 5, cacheWrite5m: 1.25, cacheWrite1h: 2, cacheRead: 0.1 }, contextWindow: K200, maxOutput: 64_000, thinking: MANUAL_ONLY, forcedToolChoice: true, minCacheableTokens: 4_096 }),
  'claude-3-7-sonnet': spec('claude-3-7-sonnet-20250219', { aliases: ['claude-3-7-sonnet-latest'], price: sonnet4, contextWindow: K200, maxOutput: 64_000, thinking: MANUAL_ONLY, forcedToolChoice: true, minCacheableTokens: 1_024 }),
  'claude-3-5-haiku': spec('claude-3-5-haiku-20241022', { aliases: ['claude-3-5-haiku-latest'], price: { input: 0.8, output: 4, cacheWrite5m: 1, cacheWrite1h: 1.6, cacheRead: 0.08 }, contextWindow: K200, maxOutput: 8_192, thinking: { manual: false, adaptive: false }, forcedToolChoice: true, minCacheableTokens: 2_048 }),
  'claude-3-haiku': spec('claude-3-haiku-20240307', { price: { input: 0.25, output: 1.25, cacheWrite5m: 0.3, cacheWrite1h: 0.5, cacheRead: 0.03 }, contextWindow: K200, maxOutput: 4_096, thinking: { manual: false, adaptive: false }, forcedToolChoice: true, minCacheableTokens: 2_048 }),
};

/** Every id that names a model: canonical, billed-as and aliases. */
const BY_ID: ReadonlyMap<string, string> = new Map(
  Object.entries(MODELS).flatMap(([canonical, s]) => [canonical, s.billedAs, ...s.aliases].map((id) => [id, canonical] as const)),
);

/**
 * The canonical id of `model`, or null when Keel does not know it. A dated id the table
 * does not list (`…-YYYYMMDD`) names the same model as the id it extends — only when that
 * id's own snapshot is dated too (a dateless model has no snapshots to add).
 */
export function canonicalModel(model: string): string | null {
  const direct = BY_ID.get(model);
  if (direct !== undefined) return direct;
  const base = /^(.*)-\d{8}$/.exec(model)?.[1];
  if (base === undefined) return null;
  const canonical = BY_ID.get(base);
  return canonical !== undefined && /-\d{8}$/.test(MODELS[canonical]!.billedAs) ? canonical : null;
}

export function modelSpec(model: string): ModelSpec | null {
  const canonical = canonicalModel(model);
  return canonical === null ? null : MODELS[canonical]!;
}

/** Every id a request may name, canonical first. */
export const KNOWN_MODEL_IDS: readonly string[] = [...BY_ID.keys()];

/** What a run asks of its model that the model table can judge before anything starts. */
export interface ModelRequest {
  readonly maxTokens?: number | undefined;
  readonly thinking?: { readonly budgetTokens?: number | undefined; readonly adaptive?: boolean | undefined } | undefined;
}

/**
 * Why `model` cannot take this request, by the capability table (one line per problem, naming
 * the option): a thinking mode it does not take, an output limit above its largest. A model
 * the table does not know is judged by the worker's price table as the run starts (it may be
 * in KEEL_MODEL_PRICES there), not here.
 */
export function modelRequestIssues(model: string, request: ModelRequest): string[] {
  const spec = modelSpec(model);
  if (spec === null) return [];
  const issues: string[] = [];
  if (request.thinking?.budgetTokens !== undefined && !spec.thinking.manual) issues.push(`thinking: ${model} takes no thinking budget (adaptive only): use { adaptive: true }`);
  if (request.thinking?.adaptive === true && !spec.thinking.adaptive) issues.push(`thinking: ${model} does not take adaptive thinking: give budgetTokens`);
  if (request.maxTokens !== undefined && request.maxTokens > spec.maxOutput) issues.push(`maxTokens: ${request.maxTokens} is above ${model}'s largest max_tokens, ${spec.maxOutput}`);
  return issues;
}
