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
