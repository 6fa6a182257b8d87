// A goal's budget is one ceiling over everything it runs, however many agents run at once.
// Each agent's calls are fitted to the limits it was started with (machines/call-ceiling.ts),
// so those limits must not overlap: an agent starts with a share of what is free — the
// goal's limit, less what has been reported spent, less what the agents already running
// may still spend of their own shares — split evenly over the slots still free, so agents
// started together get equal shares and the last slot gets the rest. A share an agent
// does not spend comes back when it ends. The slots: the free ones, or fewer when fewer tasks
// are left to start (a lone task gets it all). The goal workflow keeps the shares.
import type { BudgetLimits, TurnLimits, Usage } from './budget';

/** An agent that is running: the share it started with and what it has reported spent. */
export interface RunningShare {
  readonly share: TurnLimits;
  readonly used: Usage;
}

/** The token and cost limits the next agent starts with (`maxSteps` is the caller's). */
export function agentShare(limits: BudgetLimits, goalUsed: Usage, running: readonly RunningShare[], freeSlots: number): Omit<TurnLimits, 'maxSteps'> {
  const slots = Math.max(1, freeSlots);
  const free = (allowed: number | null, spent: number, pick: (l: TurnLimits) => number | null, picked: (u: Usage) => number): number | null => {
    if (allowed === null) return null;
    const held = running.reduce((sum, r) => sum + Math.max(0, (pick(r.share) ?? 0) - picked(r.used)), 0);
    return Math.max(0, allowed - spent - held) / slots;
  };
  const tokens = (n: number | null): number | null => (n === null ? null : Math.floor(n));
  return {
    inputTokens: tokens(free(limits.inputTokens, goalUsed.inputTokens, (l) => l.inputTokens, (u) => u.inputTokens)),
    outputTokens: tokens(free(limits.outputTokens, goalUsed.outputTokens, (l) => l.outputTokens, (u) => u.outputTokens)),
    costUsd: free(limits.costUsd, goalUsed.costUsd, (l) => l.costUsd, (u) => u.costUsd),
  };
}

/** How many agents the next share is split over: free slots, or the tasks left to start if fewer (at least 1). */
export function shareSlots(tasks: readonly { id: string; status: string }[], runningTaskIds: ReadonlySet<string>, maxConcurrency: number): number {
  const unstarted = tasks.filter((t) => (t.status === 'pending' || t.status === 'running') && !runningTaskIds.has(t.id)).length;
  return Math.max(1, Math.min(maxConcurrency - runningTaskIds.size, unstarted));
}
