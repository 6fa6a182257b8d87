// What each model accepts as `max_tokens` (the API refuses more with a 400): a turn that
// raises its limit after a truncated tool call stays within it, and the stand-in refuses
// what the real API refuses.

/** The largest output limit of a model family; 64 000 for current models (Sonnet 4.x, Haiku 4.5, Opus 4.5+). */
export function maxOutputTokens(model: string): number {
  if (/claude-opus-4-(0|1)\b|claude-opus-4-20250514|claude-opus-4-1-/.test(model)) return 32_000;
  if (/claude-3-haiku/.test(model)) return 4_096;
  if (/claude-3-5-/.test(model)) return 8_192;
  return 64_000;
}

/**
 * The models the Messages API knows, by alias (a dated snapshot `…-YYYYMMDD` of one is
 * known too). The stand-in answers any other model with the API's 404.
 */
export const KNOWN_MODELS = [
  'claude-fable-5-1',
  'claude-mythos-5-1',
  'claude-fable-5',
  'claude-mythos-5',
  'claude-opus-5',
  'claude-sonnet-5',
  'claude-opus-4-8',
  'claude-opus-4-7',
  'claude-opus-4-6',
  'claude-opus-4-5',
  'claude-opus-4-1',
  'claude-opus-4-0',
  'claude-opus-4',
  'claude-sonnet-4-6',
  'claude-sonnet-4-5',
  'claude-sonnet-4-0',
  'claude-sonnet-4',
  'claude-haiku-4-5',
  'claude-3-7-sonnet',
  'claude-3-5-haiku',
  'claude-3-haiku',
] as const;

const aliasOf = (model: string): string => /^(.*)-\d{8}$/.exec(model)?.[1] ?? model;

export function isKnownModel(model: string): boolean {
  return (KNOWN_MODELS as readonly string[]).includes(aliasOf(model));
}

/**
 * The shortest prefix the API caches for a model (platform.claude.com, "Prompt caching":
 * a shorter prefix is processed without caching, and nothing says so): 512 tokens for
 * Opus 5, Fable 5 and Mythos 5; 2 048 for Opus 4.7 and the Haiku 3 models; 4 096 for
 * Opus 4.6, Opus 4.5 and Haiku 4.5; 1 024 for the others (Sonnet, Opus 4.8, Opus 4 / 4.1).
 */
export function minCacheableTokens(model: string): number {
  const alias = aliasOf(model);
  if (/^claude-(opus-5|fable-5|mythos-5)/.test(alias)) return 512;
  if (/^claude-(opus-4-6|opus-4-5|haiku-4-5)$/.test(alias)) return 4_096;
  if (/^claude-(opus-4-7|3-5-haiku|3-haiku)$/.test(alias)) return 2_048;
  return 1_024;
}

/** The context window (input + output tokens) a request must fit in: 200 000 tokens for every current model by default. */
export function contextWindowTokens(model: string): number {
  void model;
  return 200_000;
}

/**
 * Above this many input tokens (as the last response reported them) a session compacts
 * before its next call, unless configured otherwise: 80 % of the context window, which
 * leaves room for the next tool results and the answer.
 */
export function defaultCompactAboveTokens(model: string): number {
  return Math.floor(contextWindowTokens(model) * 0.8);
}
