// Budgets are data the machines enforce: a limit of null means "no limit". The check is
// one pure function so the session, the turn and the autonomy loop agree on what
// "exhausted" means: used ≥ allowed (nothing left to spend).
import { z } from 'zod';
import { nonNeg, nonNegInt } from './core';
import { lazySchema } from './lazy-schema';

export const budgetLimitsSchema = lazySchema(() => z.strictObject({
  inputTokens: nonNegInt.nullable(),
  outputTokens: nonNegInt.nullable(),
  costUsd: nonNeg.nullable(),
  stepsPerTurn: z.number().int().positive().nullable(),
  turns: z.number().int().positive().nullable(),
  wallClockMs: z.number().int().positive().nullable(),
}));
export type BudgetLimits = z.infer<typeof budgetLimitsSchema>;

export const NO_LIMITS: BudgetLimits = {
  inputTokens: null,
  outputTokens: null,
  costUsd: null,
  stepsPerTurn: null,
  turns: null,
  wallClockMs: null,
};

export const usageSchema = lazySchema(() => z.strictObject({
  inputTokens: nonNegInt,
  outputTokens: nonNegInt,
  costUsd: nonNeg,
  /** Model calls whose price was unknown: their cost is missing from costUsd, not zero. */
  unpricedCalls: nonNegInt,
  /** Calls cut short (interrupted, dropped, worker lost) whose output tokens are estimated from the streamed text. */
  estimatedCalls: nonNegInt.optional(),
}));
export type Usage = z.infer<typeof usageSchema>;

export const ZERO_USAGE: Usage = { inputTokens: 0, outputTokens: 0, costUsd: 0, unpricedCalls: 0 };

/** Usage as a model call reports it; a null cost means the price is unknown. */
export const callUsageSchema = lazySchema(() => z.strictObject({
  inputTokens: nonNegInt,
  outputTokens: nonNegInt,
  costUsd: nonNeg.nullable(),
  /** The figures are an estimate (the stream was cut before its closing usage). */
  estimated: z.boolean().optional(),
}));
export type CallUsage = z.infer<typeof callUsageSchema>;

export function addCallUsage(usage: Usage, call: CallUsage): Usage {
  return {
    inputTokens: usage.inputTokens + call.inputTokens,
    outputTokens: usage.outputTokens + call.outputTokens,
    costUsd: usage.costUsd + (call.costUsd ?? 0),
    unpricedCalls: usage.unpricedCalls + (call.costUsd === null ? 1 : 0),
    ...(call.estimated === true || usage.estimatedCalls !== undefined ? { estimatedCalls: (usage.estimatedCalls ?? 0) + (call.estimated === true ? 1 : 0) } : {}),
  };
}

/** More of a call already counted (an interrupted call settled): its tokens and dollars, not another call. */
export function addSettledUsage(usage: Usage, more: CallUsage): Usage {
  return { ...usage, inputTokens: usage.inputTokens + more.inputTokens, outputTokens: usage.outputTokens + more.outputTokens, costUsd: usage.costUsd + (more.costUsd ?? 0) };
}

export function addUsage(a: Usage, b: Usage): Usage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    costUsd: a.costUsd + b.costUsd,
    unpricedCalls: a.unpricedCalls + b.unpricedCalls,
    ...(a.estimatedCalls !== undefined || b.estimatedCalls !== undefined ? { estimatedCalls: (a.estimatedCalls ?? 0) + (b.estimatedCalls ?? 0) } : {}),
  };
}

export type LimitName = 'input_tokens' | 'output_tokens' | 'cost_usd' | 'steps_per_turn' | 'turns' | 'wall_clock';

export const exhaustionSchema = lazySchema(() => z.strictObject({
  limit: z.enum(['input_tokens', 'output_tokens', 'cost_usd', 'steps_per_turn', 'turns', 'wall_clock']),
  allowed: nonNeg,
  used: nonNeg,
  /** How far past the limit: used − allowed (0 when it was hit exactly, or not reached). */
  over: nonNeg,
  /**
   * Set when the next call was not made because its worst case (this much of the limit's
   * unit) could cross the limit: `used` is then below `allowed` (machines/call-ceiling.ts).
   */
  next: nonNeg.optional(),
}));
export type Exhaustion = z.infer<typeof exhaustionSchema>;

export interface Consumption {
  readonly usage: Usage;
  readonly turns?: number;
  readonly steps?: number;
  readonly clockExpired?: boolean;
}

/** The first exhausted limit, in a fixed order, or null when there is budget left. */
export function findExhaustion(limits: BudgetLimits, used: Consumption): Exhaustion | null {
  const checks: [LimitName, number | null, number | undefined][] = [
    ['input_tokens', limits.inputTokens, used.usage.inputTokens],
    ['output_tokens', limits.outputTokens, used.usage.outputTokens],
    ['cost_usd', limits.costUsd, used.usage.costUsd],
    ['turns', limits.turns, used.turns],
    ['steps_per_turn', limits.stepsPerTurn, used.steps],
  ];
  for (const [limit, allowed, amount] of checks) {
    if (allowed !== null && amount !== undefined && amount >= allowed) {
      return { limit, allowed, used: amount, over: amount - allowed };
    }
  }
  if (used.clockExpired === true && limits.wallClockMs !== null) {
    return { limit: 'wall_clock', allowed: limits.wallClockMs, used: limits.wallClockMs, over: 0 };
  }
  return null;
}

/** What a turn may still spend, given the session's limits and what it has used. */
export const turnLimitsSchema = lazySchema(() => z.strictObject({
  inputTokens: nonNegInt.nullable(),
  outputTokens: nonNegInt.nullable(),
  costUsd: nonNeg.nullable(),
  maxSteps: z.number().int().positive().nullable(),
}));
export type TurnLimits = z.infer<typeof turnLimitsSchema>;

export function remainingForTurn(limits: BudgetLimits, usage: Usage): TurnLimits {
  const left = (allowed: number | null, used: number): number | null => (allowed === null ? null : Math.max(0, allowed - used));
  return {
    inputTokens: left(limits.inputTokens, usage.inputTokens),
    outputTokens: left(limits.outputTokens, usage.outputTokens),
    costUsd: left(limits.costUsd, usage.costUsd),
    maxSteps: limits.stepsPerTurn,
  };
}

/** Limits with some raised; null in the patch means "remove this limit". */
export const budgetPatchSchema = lazySchema(() => budgetLimitsSchema.partial());
export type BudgetPatch = z.infer<typeof budgetPatchSchema>;

export function applyPatch(limits: BudgetLimits, patch: BudgetPatch): BudgetLimits {
  return { ...limits, ...Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) };
}

const amount = (limit: LimitName, n: number): string => (limit === 'cost_usd' ? `$${n.toFixed(4)}` : limit === 'wall_clock' ? `${n} ms` : `${Math.round(n)}`);

/** One line for people: which limit, how much of it is used, and what the next call would have needed. */
export function describeExhaustion(e: Exhaustion): string {
  const head = `the ${e.limit} budget is exhausted (${amount(e.limit, e.used)} of ${amount(e.limit, e.allowed)} used`;
  return e.next === undefined ? `${head})` : `${head}; the next model call could need ${amount(e.limit, e.next)})`;
}
