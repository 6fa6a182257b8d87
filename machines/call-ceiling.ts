// A budget is a ceiling before the call, not a check after it: each call's worst case is
// estimated before it is sent, and a call that could cross a limit is shrunk to fit
// (`max_tokens` lowered to what the output and USD budgets leave) or not made at all.
// Pure: the model activity supplies the estimates (it alone sees the request).
import { z } from 'zod';
import { nonNeg, nonNegInt } from './core';
import { lazySchema } from './lazy-schema';
import type { TurnLimits, Usage } from './budget';

/** What one call may still spend: the turn's limits less what the turn has used (null: no limit). */
export const callBudgetSchema = lazySchema(() => z.strictObject({
  inputTokens: nonNegInt.nullable(),
  outputTokens: nonNegInt.nullable(),
  costUsd: nonNeg.nullable(),
}));
export type CallBudget = z.infer<typeof callBudgetSchema>;

/** The budget left for the next call, or null when the turn has no token or cost limit. */
export function callBudgetOf(limits: TurnLimits, used: Usage): CallBudget | null {
  if (limits.inputTokens === null && limits.outputTokens === null && limits.costUsd === null) return null;
  const left = (allowed: number | null, spent: number): number | null => (allowed === null ? null : Math.max(0, allowed - spent));
  return {
    inputTokens: left(limits.inputTokens, used.inputTokens),
    outputTokens: left(limits.outputTokens, used.outputTokens),
    costUsd: left(limits.costUsd, used.costUsd),
  };
}

export interface CallEstimate {
  /** Input tokens the request will be billed for (cached ones included). */
  readonly inputTokens: number;
  /** Their cost if nothing is read from the cache (all written, or all uncached). */
  readonly inputUsd: number;
  /** USD per output token. */
  readonly outputUsdPerToken: number;
  /** The `max_tokens` the call would be sent with. */
  readonly maxTokens: number;
  /** The smallest `max_tokens` the request is valid with (more than a manual thinking budget). */
  readonly minMaxTokens: number;
}

export type CallFit =
  | { readonly fits: true; readonly maxTokens: number }
  | { readonly fits: false; readonly limit: 'input_tokens' | 'output_tokens' | 'cost_usd'; readonly left: number; readonly needed: number };

/** The `max_tokens` a call may be sent with so that even its worst case stays within `budget`, or why it cannot be made. */
export function fitCall(budget: CallBudget, estimate: CallEstimate): CallFit {
  if (budget.inputTokens !== null && estimate.inputTokens > budget.inputTokens) {
    return { fits: false, limit: 'input_tokens', left: budget.inputTokens, needed: estimate.inputTokens };
  }
  let maxTokens = estimate.maxTokens;
  let bound: 'output_tokens' | 'cost_usd' | null = null;
  if (budget.outputTokens !== null && budget.outputTokens < maxTokens) {
    maxTokens = budget.outputTokens;
    bound = 'output_tokens';
  }
  if (budget.costUsd !== null) {
    const usdLeft = budget.costUsd - estimate.inputUsd;
    const affordable = usdLeft <= 0 ? 0 : estimate.outputUsdPerToken > 0 ? Math.floor(usdLeft / estimate.outputUsdPerToken) : maxTokens;
    if (affordable < maxTokens) {
      maxTokens = affordable;
      bound = 'cost_usd';
    }
  }
  if (maxTokens >= estimate.minMaxTokens) return { fits: true, maxTokens };
  if (bound === 'cost_usd') {
    return { fits: false, limit: 'cost_usd', left: budget.costUsd!, needed: estimate.inputUsd + estimate.minMaxTokens * estimate.outputUsdPerToken };
  }
  return { fits: false, limit: 'output_tokens', left: budget.outputTokens ?? 0, needed: estimate.minMaxTokens };
}
