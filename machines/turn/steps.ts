// How a step of a turn ends: the model is called (again), the turn completes, or it fails.
// Shared by the machine's reducer, its answer to a model response and its tool scheduling.
import { findExhaustion, NO_LIMITS, type Exhaustion, type TurnLimits, type Usage } from '../budget';
import { callBudgetOf, type CallBudget } from '../call-ceiling';
import type { Message } from '../conversation';
import type { Step } from '../core';
import { emit } from '../events';
import type { FinishTask } from '../task-outcome';
import type { CompleteReason } from './outcome';
import { modelActivityId, type TurnDirective, type TurnResult } from './protocol';
import type { TurnState } from './state';

export type Common = Pick<TurnState, 'config' | 'usage' | 'steers' | 'toolStats' | 'text'>;
export type D = TurnDirective;
export type Out = Step<TurnState, D>;

export const commonOf = (s: TurnState): Common => ({ config: s.config, usage: s.usage, steers: s.steers, toolStats: s.toolStats, text: s.text });
export const stepOf = (s: TurnState): number => (s.status === 'idle' ? 0 : s.step);
export const append = (...messages: Message[]): D => ({ type: 'append_messages', messages });
export const note = (text: string): Message => ({ role: 'assistant', content: [{ type: 'text', text }] });

export function turnExhaustion(limits: TurnLimits, usage: Usage): Exhaustion | null {
  return findExhaustion({ ...NO_LIMITS, inputTokens: limits.inputTokens, outputTokens: limits.outputTokens, costUsd: limits.costUsd }, { usage });
}

interface CallOptions {
  readonly raised?: boolean | undefined;
  readonly compacted?: boolean | undefined;
  readonly compact?: boolean | undefined;
  readonly continuation?: boolean | undefined;
}

export function callModel(c: Common, stepNo: number, attempt: number, directives: D[], o: CallOptions = {}): Out {
  const activityId = modelActivityId(c.config.turnId, stepNo, attempt);
  const raisedTo = o.raised === true ? c.config.raisedMaxTokens : null;
  return {
    state: {
      status: 'calling_llm',
      ...c,
      step: stepNo,
      attempt,
      activityId,
      ...(o.raised === true ? { raised: true } : {}),
      ...(o.compacted === true ? { compacted: true } : {}),
      ...(o.continuation === true ? { continuation: true } : {}),
    },
    directives: [
      ...directives,
      {
        type: 'call_model',
        turnId: c.config.turnId,
        step: stepNo,
        attempt,
        activityId,
        ...(typeof raisedTo === 'number' ? { maxTokens: raisedTo } : {}),
        ...(o.compact === true ? { compact: true } : {}),
        ...(o.continuation === true ? { continuation: true } : {}),
        ...budgetOf(c),
      },
    ],
  };
}

const budgetOf = (c: Common): { budget?: CallBudget } => {
  const budget = callBudgetOf(c.config.limits, c.usage);
  return budget === null ? {} : { budget };
};

export function result(c: Common, stepNo: number, outcome: TurnResult['outcome'], extra: Partial<TurnResult> = {}): D {
  return {
    type: 'finish',
    result: {
      turnId: c.config.turnId,
      outcome,
      steps: stepNo,
      usage: c.usage,
      toolCalls: c.toolStats,
      finalOutput: c.text,
      error: null,
      exhaustion: null,
      unappliedSteers: c.steers,
      ...extra,
    },
  };
}

export function complete(
  c: Common,
  stepNo: number,
  reason: CompleteReason,
  stopReason: string | null,
  exhaustion: Exhaustion | null,
  directives: D[],
  refusal: { category: string | null; explanation: string | null } | null = null,
  finish: FinishTask | null = null,
): Out {
  const out: D[] = [...directives];
  if (exhaustion !== null) out.push(emit('budget.exhausted', { ...exhaustion, scope: `turn ${c.config.turnId}` }));
  out.push(emit('turn.completed', { turnId: c.config.turnId, reason, finalOutput: c.text, usage: c.usage, stopReason }));
  const outcome = reason === 'end_turn' ? 'completed' : reason;
  out.push(result(c, stepNo, outcome, { exhaustion, stopReason, ...(refusal !== null ? { refusal } : {}), ...(finish !== null ? { finish } : {}) }));
  return {
    state: { status: 'completed', ...c, step: stepNo, reason, stopReason, exhaustion, ...(refusal !== null ? { refusal } : {}) },
    directives: out,
  };
}

export function fail(c: Common, stepNo: number, attempts: number, message: string, error: string, errorType: 'non_retryable' | 'retries_exhausted', directives: D[] = []): Out {
  const turnId = c.config.turnId;
  return {
    state: { status: 'failed', ...c, step: stepNo, error },
    directives: [
      ...directives,
      // The user's message is stored and unanswered: close it so the next turn is valid.
      append(note(`(The model could not answer: ${message})`)),
      emit('turn.error', { turnId, errorType, message, attempts }),
      result(c, stepNo, 'failed', { error }),
    ],
  };
}

export const stepLimit = (c: Common, stepNo: number): Exhaustion | null =>
  c.config.limits.maxSteps !== null && stepNo >= c.config.limits.maxSteps
    ? { limit: 'steps_per_turn', allowed: c.config.limits.maxSteps, used: stepNo, over: stepNo - c.config.limits.maxSteps }
    : null;
