// One turn of the agent loop (ReAct): call the model, run the tools it asks for, call it
// again with their results, until it stops asking (seed 002 TurnEngine and Agent, 000
// Agent, 001, 004). The conversation stays out of the directives that start activities:
// the runner appends what `append_messages` gives it to its own store and passes the
// model activity a reference, so workflow history grows with each step's new messages
// only. Every `call_model` is preceded by appends that leave the stored conversation a
// valid Messages API request.
import { addCallUsage, addUsage, type CallUsage, type Exhaustion } from '../budget';
import { assertNever, defineMachine, reject } from '../core';
import { cancelActivity, cancelTimer, startTimer } from '../directives';
import { emit } from '../events';
import { maxCallAttempts, retryDecision } from '../model-retry';
import { isTerminalCall, toolCallMachine } from '../tool-call';
import { retryTimerId, turnEventSchema, type TurnDirective, type TurnEvent } from './protocol';
import { onModelResponse } from './response';
import { turnStateSchema, type TurnState, type TurnStatus } from './state';
import { append, callModel, commonOf, complete, fail, note, result, stepOf, turnExhaustion, type Common, type D, type Out } from './steps';
import { countResults, onToolEvent, resultBlocks } from './tools';

const S = ['idle', 'calling_llm', 'retry_wait', 'executing_tools', 'completed', 'interrupted', 'failed'] as const;
const E = ['start', 'model_response', 'model_failed', 'timer_fired', 'tool', 'answer', 'steer', 'interrupt'] as const;
type Ev = TurnEvent['type'];
const row = (from: TurnStatus, event: Ev, to: TurnStatus, guard?: string) => (guard === undefined ? { from, event, to } : { from, event, to, guard });
const afterTools = (event: Ev, what: string) => [
  row('executing_tools', event, 'executing_tools', `${what}; calls still open`),
  row('executing_tools', event, 'calling_llm', `${what}; all calls finished`),
  row('executing_tools', event, 'completed', `${what}; all calls finished at the step limit or after finish_task`),
];

export const turnMachine = defineMachine<TurnState, TurnEvent, TurnDirective>({
  name: 'turn',
  states: S,
  events: E,
  terminal: ['completed', 'interrupted', 'failed'],
  table: [
    row('idle', 'start', 'calling_llm', 'budget left'),
    row('calling_llm', 'model_response', 'executing_tools', 'tool_use blocks, budget left'),
    row('calling_llm', 'model_response', 'calling_llm', 'no tool_use, steer pending, steps left'),
    row('calling_llm', 'model_response', 'calling_llm', 'pause_turn; or cut in a tool_use / context window exceeded, first time this step'),
    row('calling_llm', 'model_response', 'completed', 'no tool_use (end_turn / max_steps / truncated / refused), only finish_task, or budget exhausted'),
    row('calling_llm', 'model_response', 'failed', 'context window exceeded again after compaction'),
    row('calling_llm', 'model_failed', 'retry_wait', 'retry table allows another attempt, budget left'),
    row('calling_llm', 'model_failed', 'completed', 'budget exhausted by the failed attempt, or the call not made: its worst case could cross a limit'),
    row('calling_llm', 'model_failed', 'failed', 'not retried by the retry table'),
    row('calling_llm', 'steer', 'calling_llm'),
    row('calling_llm', 'interrupt', 'interrupted'),
    row('retry_wait', 'timer_fired', 'calling_llm', 'this retry timer'),
    row('retry_wait', 'steer', 'retry_wait'),
    row('retry_wait', 'interrupt', 'interrupted'),
    ...afterTools('tool', 'known call'),
    ...afterTools('answer', 'ask call running'),
    ...afterTools('timer_fired', "a call's approval timer"),
    row('executing_tools', 'steer', 'executing_tools'),
    row('executing_tools', 'interrupt', 'interrupted'),
  ],
  stateSchema: turnStateSchema,
  eventSchema: turnEventSchema,
  reduce,
});

function reduce(state: TurnState, event: TurnEvent): Out {
  const c = commonOf(state);
  const turnId = c.config.turnId;
  switch (event.type) {
    case 'start': {
      if (state.status !== 'idle') return reject('the turn has already started');
      const exhausted = turnExhaustion(c.config.limits, c.usage);
      if (exhausted !== null) return reject(`no ${exhausted.limit} budget left for a turn`);
      return callModel(c, 1, 1, [emit('turn.started', { turnId, input: event.text }), append({ role: 'user', content: [{ type: 'text', text: event.text }] })]);
    }
    case 'model_response':
      if (state.status !== 'calling_llm') return reject('no model call in flight');
      return onModelResponse(state, event);
    case 'model_failed': {
      if (state.status !== 'calling_llm') return reject('no model call in flight');
      // A failed attempt is real spend: counted first, so a budget stops a call that keeps failing.
      const spent: Common = event.usage !== undefined ? { ...c, usage: addCallUsage(c.usage, event.usage) } : c;
      // Not made: its worst case could cross a limit. The turn stops as if that limit were spent.
      if (event.overBudget !== undefined) {
        const { limit, left, needed } = event.overBudget;
        const exhaustion = overBudgetExhaustion(spent, limit, needed);
        return complete(spent, state.step, 'budget_exhausted', null, exhaustion, [
          append(note(`(Stopped before the next model call: it could need ${figure(limit, needed)} of ${limit}, and ${figure(limit, left)} is left.)`)),
        ]);
      }
      const failureClass = event.failureClass ?? (event.retryable ? 'transient' : 'fatal');
      // Compaction is once a call (its own counter); every retry comes out of the call's attempts.
      const row = c.config.retryRow ?? 'turn';
      const decision =
        state.attempt >= maxCallAttempts(row)
          ? ({ retry: false, reason: 'attempts spent' } as const)
          : retryDecision(row, failureClass, failureClass === 'context_window' ? (state.compacted === true ? 2 : 1) : state.attempt, event.retryAfterMs, c.config.retryBackoffMs);
      const exhaustion = turnExhaustion(spent.config.limits, spent.usage);
      if (decision.retry && exhaustion !== null) {
        return complete(spent, state.step, 'budget_exhausted', null, exhaustion, [append(note(`(Stopped: the budget is exhausted; the model call failed: ${event.message})`))]);
      }
      if (decision.retry) {
        const { delayMs } = decision;
        const timerId = retryTimerId(turnId, state.step, state.attempt);
        return {
          state: {
            status: 'retry_wait',
            ...spent,
            step: state.step,
            attempt: state.attempt,
            timerId,
            error: event.message,
            ...(state.raised === true ? { raised: true } : {}),
            ...(state.continuation === true ? { continuation: true } : {}),
            ...(state.compacted === true || decision.compact ? { compacted: true } : {}),
            ...(decision.compact ? { compact: true } : {}),
          },
          directives: [
            emit('turn.retry_scheduled', { turnId, step: state.step, attempt: state.attempt + 1, delayMs, error: event.message }),
            startTimer(timerId, delayMs),
          ],
        };
      }
      const retried = state.attempt > 1;
      const error = retried ? `the model failed ${state.attempt} times: ${event.message}` : event.message;
      return fail(spent, state.step, state.attempt, event.message, error, retried ? 'retries_exhausted' : 'non_retryable');
    }
    case 'timer_fired': {
      if (state.status === 'retry_wait') {
        if (event.timerId !== state.timerId) return reject(`timer ${event.timerId} is not the retry timer`);
        return callModel(c, state.step, state.attempt + 1, [], { raised: state.raised, compacted: state.compacted, compact: state.compact, continuation: state.continuation });
      }
      if (state.status !== 'executing_tools') return reject('no timer is running');
      const call = state.calls.find((x) => x.status === 'awaiting_approval' && x.timerId === event.timerId);
      if (call === undefined) return reject(`timer ${event.timerId} belongs to no call awaiting approval`);
      return onToolEvent(state, call.callId, event);
    }
    case 'tool':
      if (event.event.type === 'permit_granted') return reject('permits are granted by the turn, not from outside');
      // A sub-agent's spend is the turn's (machines/sub-agents.ts): counted as its result arrives.
      if ((event.event.type === 'succeeded' || event.event.type === 'failed') && event.event.usage !== undefined && state.status === 'executing_tools' && state.calls.some((x) => x.callId === event.callId && !isTerminalCall(x))) {
        return onToolEvent({ ...state, usage: addUsage(state.usage, event.event.usage) }, event.callId, event.event);
      }
      return onToolEvent(state, event.callId, event.event);
    case 'answer': {
      if (state.status !== 'executing_tools') return reject('no question is pending');
      const call = state.calls.find((x) => x.callId === event.callId);
      if (call === undefined || call.kind !== 'ask' || call.status !== 'running') return reject(`no question is pending for call ${event.callId}`);
      return onToolEvent(state, event.callId, { type: 'succeeded', output: event.text });
    }
    case 'steer':
      if (state.status !== 'calling_llm' && state.status !== 'retry_wait' && state.status !== 'executing_tools') return reject('nothing to steer');
      return { state: { ...state, steers: [...state.steers, event.text] }, directives: [emit('turn.steer_queued', { turnId, text: event.text })] };
    case 'interrupt':
      return interrupt(state, event.reason ?? 'interrupted by the user', event.partialText ?? '', event.partialUsage);
    default:
      return assertNever(event);
  }
}

function interrupt(state: TurnState, reason: string, partial: string, partialUsage: CallUsage | undefined): Out {
  const base = commonOf(state);
  // The interrupted call's input and streamed output were billed: they count.
  const c: Common = state.status === 'calling_llm' && partialUsage !== undefined ? { ...base, usage: addCallUsage(base.usage, partialUsage) } : base;
  const turnId = c.config.turnId;
  const out: D[] = [];
  let done = c;
  let partialOutput: string | null = null;
  switch (state.status) {
    case 'calling_llm':
      out.push(cancelActivity(state.activityId));
      // Keep what the model had already said; an empty text block would be refused.
      partialOutput = partial.trim() === '' ? null : partial;
      out.push(append(note(partialOutput ?? '(interrupted)')));
      if (partialOutput !== null) done = { ...c, text: partialOutput };
      break;
    case 'retry_wait':
      out.push(cancelTimer(state.timerId), append(note('(interrupted)')));
      break;
    case 'executing_tools': {
      const calls = state.calls.map((call) => {
        if (isTerminalCall(call)) return call;
        const r = toolCallMachine.transition(call, { type: 'cancel', reason });
        if (!r.ok) return call;
        out.push(...r.directives);
        return r.state;
      });
      // Every tool_use gets its result (cancelled if unfinished) before the next model call.
      out.push(append({ role: 'user', content: resultBlocks(calls) }, note('(interrupted)')));
      done = { ...c, toolStats: countResults(c.toolStats, calls) };
      break;
    }
    case 'idle':
    case 'completed':
    case 'interrupted':
    case 'failed':
      return reject('nothing to interrupt');
    default:
      return assertNever(state);
  }
  const at = stepOf(state);
  out.push(emit('turn.interrupted', { turnId, reason, partialOutput }), result(done, at, 'interrupted'));
  return { state: { status: 'interrupted', ...done, step: at, reason }, directives: out };
}

const figure = (limit: string, n: number): string => (limit === 'cost_usd' ? `$${n.toFixed(4)}` : `${Math.ceil(n)} tokens`);

function overBudgetExhaustion(c: Common, limit: 'input_tokens' | 'output_tokens' | 'cost_usd', needed: number): Exhaustion {
  const { limits } = c.config;
  const [allowed, used] =
    limit === 'input_tokens' ? [limits.inputTokens, c.usage.inputTokens] : limit === 'output_tokens' ? [limits.outputTokens, c.usage.outputTokens] : [limits.costUsd, c.usage.costUsd];
  const cap = allowed ?? used;
  return { limit, allowed: cap, used, over: Math.max(0, used - cap), next: needed };
}
