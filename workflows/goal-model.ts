// The goal's planner and critic: model calls that must answer through a tool. One tier of
// retries lives here: the goal cannot go on without its planner or critic, so they get more
// attempts than a turn's call; malformed output and fatal errors are never retried, and
// every attempt's spend is counted.
import { CancellationScope, isCancellation, proxyActivities, sleep, type ActivityOptions } from '@temporalio/workflow';
import type { ModelActivities, ModelCallInput, ModelCallResult } from '../activities/llm';
import { MODEL_ACTIVITY_OPTIONS } from '../activities/llm-options';
import type { CallUsage, TaskInput } from '../machines/index';
import type { submitPlanTool } from './planning';
import { modelFailure } from './turn-runner';

/** Rounds of model activity attempts before the planner or critic counts as failed. */
const PLANNER_ATTEMPTS = 8;
/** Seed 001's 1 s / 2 s / 3 s, then 5 s apart; a longer retry-after wins. */
const PLANNER_BACKOFF_MS = [1_000, 2_000, 3_000, 5_000, 5_000, 5_000, 5_000];

export interface ToolCallerConfig {
  model: string;
  maxTokens: number;
  modelActivity?: Partial<ActivityOptions> | undefined;
  /** Calls made by earlier runs (activity ids stay unique across continue-as-new). */
  calls?: number | undefined;
}

export class ToolCaller {
  /** Calls in flight, by activity id: cancelled when the goal ends. */
  readonly scopes = new Map<string, CancellationScope>();
  calls: number;

  constructor(private readonly config: ToolCallerConfig) {
    this.calls = config.calls ?? 0;
  }

  get busy(): boolean {
    return this.scopes.size > 0;
  }

  cancelAll(): void {
    for (const scope of this.scopes.values()) scope.cancel();
  }

  /** Calls the model with the tool forced; `failedSpend` hears what failed attempts were billed. */
  call(name: string, system: string, prompt: string, tool: typeof submitPlanTool, failedSpend: (usage: CallUsage) => void): Promise<{ input: unknown; usage: CallUsage }> {
    const activityId = `${name}-${++this.calls}`;
    const overrides = this.config.modelActivity ?? {};
    const callModelAs = (id: string) =>
      proxyActivities<ModelActivities>({
        ...MODEL_ACTIVITY_OPTIONS,
        ...overrides,
        // As in the turn (workflows/turn-runner.ts): Temporal retries only a lost attempt;
        // every other failure comes back here with what it was billed for.
        retry: { ...MODEL_ACTIVITY_OPTIONS.retry, ...overrides.retry, maximumAttempts: 2 },
        activityId: id,
      }).callModel;
    const scope = new CancellationScope();
    this.scopes.set(activityId, scope);
    const request: ModelCallInput = {
      callId: activityId,
      serverRetries: 'timeouts_only',
      model: this.config.model,
      maxTokens: this.config.maxTokens,
      system,
      tools: [tool as unknown as NonNullable<ModelCallInput['tools']>[number]],
      toolChoice: { type: 'tool', name },
      conversation: { kind: 'inline', messages: [{ role: 'user', content: prompt }] },
    };
    // About 35 s at most of waiting: a planner failing on one bad minute stopped whole goals in `npm run chaos`.
    const call = scope.run(async () => {
      for (let round = 1; ; round++) {
        const id = round === 1 ? activityId : `${activityId}-round-${round}`;
        try {
          return await callModelAs(id)({ ...request, callId: id });
        } catch (error) {
          if (isCancellation(error)) throw error;
          // What a failed attempt was billed for counts like any other spend (issue [3/7]).
          const failed = modelFailure(error);
          if (failed.usage) failedSpend(failed.usage);
          // The failure's details say whether it is worth another round (the activity marks
          // every failure non-retryable for Temporal itself: one retry tier, not two).
          if (round >= PLANNER_ATTEMPTS || !failed.retryable) throw error;
          await sleep(Math.max(PLANNER_BACKOFF_MS[round - 1] ?? PLANNER_BACKOFF_MS.at(-1)!, failed.retryAfterMs ?? 0));
        }
      }
    });
    const forget = () => this.scopes.delete(activityId);
    call.then(forget, forget);
    return call.then((result) => ({ input: toolInput(result, name), usage: callUsage(result) }));
  }
}

function toolInput(result: ModelCallResult, name: string): unknown {
  for (const block of result.message.content) if (block.type === 'tool_use' && block.name === name) return block.input;
  return null;
}

function callUsage(result: ModelCallResult): CallUsage {
  const u = result.usage;
  return {
    inputTokens: u.input_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0),
    outputTokens: u.output_tokens,
    costUsd: result.cost?.total ?? null,
  };
}

/** Tasks from an answer that does not have the tool's shape, as they are, for the machine to judge. */
export function looseTasks(input: unknown): TaskInput[] {
  const tasks = (input as { tasks?: unknown } | null)?.tasks;
  if (!Array.isArray(tasks)) return [];
  return tasks.map((t: unknown, i) => {
    const o = (typeof t === 'object' && t !== null ? t : {}) as Record<string, unknown>;
    const { acceptance, ...rest } = o;
    const instructions = typeof rest.instructions === 'string' && typeof acceptance === 'string' ? `${rest.instructions}\n\nAcceptance check: ${acceptance}` : rest.instructions;
    return { ...rest, id: typeof rest.id === 'string' ? rest.id : `#${i + 1}`, instructions } as never;
  });
}
