// What each model accepts, read from the one model table (machines/models.ts): a turn that
// raises its limit after a truncated tool call stays within `max_tokens`, compaction knows
// the window, the cost model knows what caches, and the stand-in refuses what the real API
// refuses. A model the table does not list (a stand-in scenario's own) gets the most common
// limits, so the stand-in can still serve it; Keel itself refuses to run one it cannot price.
import { canonicalModel, KNOWN_MODEL_IDS, modelSpec } from './models';

/** The largest `max_tokens` the API takes for `model`. */
export function maxOutputTokens(model: string): number {
  return modelSpec(model)?.maxOutput ?? 64_000;
}

/** The ids the Messages API knows (aliases and dated snapshots); the stand-in answers any other with the API's 404. */
export const KNOWN_MODELS = KNOWN_MODEL_IDS;

export function isKnownModel(model: string): boolean {
  return canonicalModel(model) !== null;
}

/** The shortest prefix the API caches for a model (a shorter prefix is processed without caching, and nothing says so). */
export function minCacheableTokens(model: string): number {
  return modelSpec(model)?.minCacheableTokens ?? 1_024;
}

/** The context window (input + output tokens) a request must fit in. */
export function contextWindowTokens(model: string): number {
  return modelSpec(model)?.contextWindow ?? 200_000;
}

/**
 * Above this many input tokens (as the last response reported them) a session compacts
 * before its next call, unless configured otherwise: 80 % of the context window, which
 * leaves room for the next tool results and the answer.
 */
export function defaultCompactAboveTokens(model: string): number {
  return Math.floor(contextWindowTokens(model) * 0.8);
}

/** Whether the API takes `tool_choice` forcing a tool for this model (not where thinking is always on). */
export function forcesToolChoice(model: string): boolean {
  return modelSpec(model)?.forcedToolChoice ?? true;
}

/** Which thinking modes the API takes for this model. */
export function thinkingModes(model: string): { manual: boolean; adaptive: boolean } {
  return modelSpec(model)?.thinking ?? { manual: true, adaptive: true };
}

/**
 * How a caller that needs an answer through one tool (the planner, the critic) asks for it:
 * forced where the model takes that, else `auto` with the instruction in the prompt (where
 * thinking is always on the API refuses a forced tool).
 */
export function toolChoiceFor(model: string, name: string): { type: 'tool'; name: string } | { type: 'auto' } {
  return forcesToolChoice(model) ? { type: 'tool', name } : { type: 'auto' };
}
