// The goal's planner and critic: model calls that must answer through a tool. The rounds of
// retries after a failed call are decided by machines/answer-retry.ts, the critic's answers
// the goal cannot use by afterUnusableAnswer; both are executed here, and every attempt's
// spend is counted. Each wait before another round is in the goal's log first
// (`plan.retry_scheduled`: which advisor, the attempt, the wait, the failure), so a goal that
// waits minutes for its planner says why.
import { CancellationScope, isCancellation, patched, proxyActivities, sleep, type ActivityOptions } from '@temporalio/workflow';
import type { ModelActivities, ModelCallInput, ModelCallResult } from '../activities/llm';
import { modelActivityOptions } from '../activities/llm-options';
import { afterFailedRound, afterUnusableAnswer } from '../machines/answer-retry';
import { goalMachine, type CallUsage, type GoalDirective, type GoalEvent, type GoalState, type TaskInput, type TransitionError, type Usage } from '../machines/index';
import type { Driven } from './host';
import { failureMessage } from './payloads';
import { CRITIC_SYSTEM, PLANNER_SYSTEM, planPrompt, reviewPrompt, shapeProblems, SUBMIT_PLAN, SUBMIT_REVIEW, submitPlanSchema, submitPlanTool, submitReviewSchema, submitReviewTool, toTaskInputs } from './planning';
import { modelFailure } from './turn-results';
import { toolChoiceFor } from '../machines/model-limits';

export interface ToolCallerConfig {
  model: string;
  maxTokens: number;
  modelActivity?: Partial<ActivityOptions> | undefined;
  /** The goal's retryBackoffMs (tests): shorter waits between the planner's and critic's rounds, never more rounds. */
  retryBackoffMs?: readonly number[] | undefined;
  /** Calls made by earlier runs (activity ids stay unique across continue-as-new). */
  calls?: number | undefined;
  /** The end of a call's stream that came with its result (appended to the goal's `model` topic). */
  streamTail?: (tail: ModelCallResult['streamTail']) => void;
}

/**
 * Runs that record their planner's and critic's retries (`plan.retry_scheduled`). A run recorded
 * before it waited without a word; on replay it still does, so its event log (and the offsets
 * its readers hold) stays as it was.
 */
export const PLAN_RETRY_EVENTS_PATCH = 'plan-retry-events';

/** A round about to be called again, after `delayMs`, for `reason`. */
export interface ScheduledRetry {
  attempt: number;
  delayMs: number;
  reason: string;
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

  /**
   * Calls the model with the tool forced (asked for, where the model refuses a forced tool);
   * `failedSpend` hears what failed attempts were billed, `retrying` each round scheduled after one.
   */
  call(
    name: string,
    system: string,
    prompt: string,
    tool: typeof submitPlanTool,
    failedSpend: (usage: Usage) => void,
    retrying: (retry: ScheduledRetry) => void = () => {},
  ): Promise<{ input: unknown; usage: CallUsage }> {
    const activityId = `${name}-${++this.calls}`;
    const overrides = this.config.modelActivity ?? {};
    const callModelAs = (id: string) =>
      proxyActivities<ModelActivities>({
        // As in the turn (workflows/turn-runner.ts): Temporal retries only a lost attempt;
        // every other failure comes back here with what it was billed for.
        ...modelActivityOptions(overrides),
        activityId: id,
      }).callModel;
    const scope = new CancellationScope();
    this.scopes.set(activityId, scope);
    const toolChoice = toolChoiceFor(this.config.model, name);
    const request: ModelCallInput = {
      callId: activityId,
      serverRetries: 'timeouts_only',
      model: this.config.model,
      maxTokens: this.config.maxTokens,
      // Where the model refuses a forced tool (thinking always on), the prompt says what the choice would have.
      system: toolChoice.type === 'tool' ? system : `${system}\n\nAnswer only by calling the ${name} tool, once.`,
      tools: [tool as unknown as NonNullable<ModelCallInput['tools']>[number]],
      toolChoice,
      conversation: { kind: 'inline', messages: [{ role: 'user', content: prompt }] },
      // The prompt is new each time: caching it would only make its one use cost 1.25×.
      cacheConversation: false,
    };
    // One tier of retries, here, by the `answer` row of the table in machines/model-retry.ts.
    const call = scope.run(async () => {
      for (let round = 1; ; ) {
        const id = round === 1 ? activityId : `${activityId}-round-${round}`;
        try {
          return await callModelAs(id)({ ...request, callId: id });
        } catch (error) {
          if (isCancellation(error)) throw error;
          const failure = modelFailure(error);
          const decided = afterFailedRound(round, failure, this.config.retryBackoffMs);
          if (decided.spent !== null) failedSpend(decided.spent);
          if (decided.next.type === 'give_up') throw error;
          if (patched(PLAN_RETRY_EVENTS_PATCH)) retrying({ attempt: decided.next.round, delayMs: decided.next.delayMs, reason: failure.message });
          await sleep(decided.next.delayMs);
          round = decided.next.round;
        }
      }
    });
    const forget = () => this.scopes.delete(activityId);
    call.then(forget, forget);
    return call.then((result) => {
      this.config.streamTail?.(result.streamTail);
      return { input: toolInput(result, name), usage: callUsage(result) };
    });
  }
}

export interface AdvisorHost {
  goal(): Driven<GoalState, GoalEvent, GoalDirective>;
  post(work: () => void): void;
  rejected(source: string, error: TransitionError): void;
}

/** The planner and the critic, as the autonomy machine's request_plan / request_review ask for them. */
export class Advisors {
  constructor(
    private readonly models: ToolCaller,
    private readonly h: AdvisorHost,
    /** The last plan the model proposed: shown to it again with the errors. */
    public lastProposal: unknown,
  ) {}

  plan(attempt: number, feedback: string | null, errors: readonly string[]): void {
    const goal = this.h.goal();
    const prompt = planPrompt(goal.state, { attempt, feedback, errors, previous: this.lastProposal });
    const retrying = (retry: ScheduledRetry) => this.retryScheduled('planner', retry);
    this.models.call(SUBMIT_PLAN, PLANNER_SYSTEM, prompt, submitPlanTool, (spent) => this.countSpent(SUBMIT_PLAN, spent), retrying).then(
      ({ input, usage }) =>
        this.h.post(() => {
          this.lastProposal = input;
          const parsed = submitPlanSchema.safeParse(input);
          // A plan of the wrong shape still goes to the machine, which names each problem.
          const tasks = parsed.success ? toTaskInputs(parsed.data.tasks) : looseTasks(input);
          goal.record('planner', { type: 'plan_proposed', tasks, usage });
        }),
      (error: unknown) => {
        if (isCancellation(error)) return;
        goal.post('planner', { type: 'model_failed', error: failureMessage(error) });
      },
    );
  }

  /** The critic; an answer the machine cannot take goes back to it with the reason (bounded). */
  review(cycle: number, errors: readonly string[], attempt: number): void {
    const goal = this.h.goal();
    const retrying = (retry: ScheduledRetry) => this.retryScheduled('critic', retry);
    this.models.call(SUBMIT_REVIEW, CRITIC_SYSTEM, reviewPrompt(goal.state, cycle, errors), submitReviewTool, (spent) => this.countSpent(SUBMIT_REVIEW, spent), retrying).then(
      ({ input, usage }) =>
        this.h.post(() => {
          const parsed = submitReviewSchema.safeParse(input);
          let problems: string[];
          if (parsed.success) {
            const { verdict, findings, tasks } = parsed.data;
            const result = goal.apply({ type: 'review_done', verdict, findings, ...(tasks ? { tasks: toTaskInputs(tasks) } : {}), usage });
            if (result.ok) return;
            this.h.rejected('critic', result.error);
            problems = [result.error.message];
          } else {
            problems = shapeProblems(parsed.error);
          }
          const decided = afterUnusableAnswer(attempt, goal.state.config.maxPlanAttempts, problems, usage);
          this.countSpent(SUBMIT_REVIEW, decided.spent);
          if (decided.next.type === 'ask_again') {
            if (goal.state.status === 'reviewing') this.review(cycle, decided.next.errors, decided.next.attempt);
            return;
          }
          if (goal.state.status === 'reviewing') goal.record('critic', { type: 'model_failed', error: decided.next.error });
        }),
      (error: unknown) => {
        if (isCancellation(error)) return;
        goal.post('critic', { type: 'model_failed', error: failureMessage(error) });
      },
    );
  }

  /** The goal's log says that the advisor waits, and why (the machine checks it is the one at work). */
  private retryScheduled(advisor: 'planner' | 'critic', retry: ScheduledRetry): void {
    const goal = this.h.goal();
    if (goalMachine.isTerminal(goal.state)) return;
    goal.record(advisor, { type: 'advisor_retry_scheduled', advisor, ...retry });
  }

  /** What a failed or unusable answer was billed for counts like any other spend (issue [3/7]). */
  private countSpent(name: string, usage: Usage): void {
    const goal = this.h.goal();
    if (goalMachine.isTerminal(goal.state)) return;
    goal.record(name === SUBMIT_PLAN ? 'planner' : 'critic', { type: 'usage_reported', usage });
  }
}

function toolInput(result: ModelCallResult, name: string): unknown {
  for (const block of result.message.content) if (block.type === 'tool_use' && block.name === name) return block.input;
  return null;
}

function callUsage(result: ModelCallResult): CallUsage {
  const u = result.usage;
  // An attempt lost with its worker was billed too (its last heartbeat says for what): the planner and critic count it as the turn does.
  const lost = result.lostAttemptUsage;
  return {
    inputTokens: u.input_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0) + (lost?.inputTokens ?? 0),
    outputTokens: u.output_tokens + (lost?.outputTokens ?? 0),
    costUsd: result.cost === null || (lost !== undefined && lost.costUsd === null) ? null : result.cost.total + (lost?.costUsd ?? 0),
    ...(lost !== undefined ? { estimated: true } : {}),
  };
}

/** Tasks from an answer that does not have the tool's shape, as they are, for the machine to judge. */
function looseTasks(input: unknown): TaskInput[] {
  const tasks = (input as { tasks?: unknown } | null)?.tasks;
  if (!Array.isArray(tasks)) return [];
  return tasks.map((t: unknown, i) => {
    const o = (typeof t === 'object' && t !== null ? t : {}) as Record<string, unknown>;
    const { acceptance, ...rest } = o;
    const instructions = typeof rest.instructions === 'string' && typeof acceptance === 'string' ? `${rest.instructions}\n\nAcceptance check: ${acceptance}` : rest.instructions;
    return { ...rest, id: typeof rest.id === 'string' ? rest.id : `#${i + 1}`, instructions } as never;
  });
}
