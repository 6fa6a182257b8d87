// The session's reducer: one case per event.
import { addSettledUsage, addUsage } from '../budget';
import { assertNever, reject } from '../core';
import { emit } from '../events';
import { type SessionEvent } from './protocol';
import { raiseBudget } from './raise-budget';
import { commonOf, STOPPED_INITIALIZING, type Common, type D, type Out, type SessionState } from './state';
import { addStats, ceilingHit, close, exhaustionOf, forward, statsOf, suspend, work } from './work';

export function reduce(state: SessionState, event: SessionEvent): Out {
  const c = commonOf(state);
  const id = c.sessionId;
  switch (event.type) {
    case 'initialized': {
      const out = [emit('session.activated', { sessionId: id, rootAgentId: `${id}/agent` })];
      // Stopped while the tools were loading: ready, and still paused until resumed.
      if (state.status === 'paused') {
        if (state.reason !== STOPPED_INITIALIZING) return reject('the session is not initializing');
        return { state: { ...state, reason: 'stopped' }, directives: out };
      }
      return work(c, out);
    }
    case 'init_failed':
      if (state.status === 'paused' && state.reason !== STOPPED_INITIALIZING) return reject('the session is not initializing');
      // A human can still save it (fix the policy file, the store's configuration, the host) and restart it.
      if (event.suspend === true) {
        return {
          state: { status: 'suspended', ...c, reason: 'setup', exhaustion: null, error: event.error },
          directives: [emit('session.suspended', { sessionId: id, reason: 'setup', budget: null, errors: c.errorStreak, error: event.error })],
        };
      }
      return {
        state: { status: 'failed', ...c, error: event.error },
        directives: [emit('session.failed', { sessionId: id, error: event.error }), { type: 'complete', outcome: 'failed', reason: event.error, stats: statsOf(c) }],
      };
    case 'user_message': {
      const queued: Common = { ...c, queue: [...c.queue, { messageId: event.messageId, text: event.text }] };
      const out = [emit('session.message_received', { sessionId: id, messageId: event.messageId, queued: state.status !== 'active', queueLength: queued.queue.length })];
      if (state.status === 'active') return work(queued, out);
      return { state: { ...state, queue: queued.queue }, directives: out };
    }
    case 'call_settled': {
      const u = event.usage;
      // Tokens and dollars only: the call was counted (and marked estimated, or unpriced) when its turn was interrupted.
      const next: Common = { ...c, usage: addSettledUsage(c.usage, u) };
      const out: D[] = [emit('session.usage_settled', { sessionId: id, turnId: event.turnId, callId: event.callId, inputTokens: u.inputTokens, outputTokens: u.outputTokens, costUsd: u.costUsd })];
      // Past a limit, the session suspends as on any exhausted budget (a running turn is interrupted, as by the wall clock).
      const exhaustion = state.status === 'suspended' || state.status === 'closing' || state.status === 'initializing' ? null : exhaustionOf(next);
      if (exhaustion !== null) return suspend(next, exhaustion, [...out, ...forward(c, { type: 'interrupt', reason: 'the budget is exhausted' })]);
      return { state: { ...state, ...next }, directives: out };
    }
    case 'turn_finished': {
      const r = event.result;
      if (c.turnId !== r.turnId) return reject(`turn ${r.turnId} is not the turn in flight (${c.turnId ?? 'none'})`);
      const failed = r.outcome === 'failed';
      const next: Common = {
        ...c,
        turnId: null,
        question: null,
        usage: addUsage(c.usage, r.usage),
        turns: c.turns + 1,
        toolCalls: addStats(c.toolCalls, r.toolCalls),
        errorStreak: failed ? c.errorStreak + 1 : r.outcome === 'interrupted' ? c.errorStreak : 0,
        // A steer the turn could not apply is still the user's message: it goes first.
        queue: [...r.unappliedSteers.map((text, i) => ({ messageId: `${r.turnId}/steer-${i + 1}`, text })), ...c.queue],
      };
      const out: D[] = [emit('session.turn_finished', { sessionId: id, turnId: r.turnId, outcome: r.outcome, queueLength: next.queue.length })];
      switch (state.status) {
        case 'processing':
        case 'awaiting_input': {
          const exhaustion = exhaustionOf(next) ?? ceilingHit(next, r);
          if (exhaustion !== null) return suspend(next, exhaustion, out);
          if (next.errorStreak >= c.config.maxConsecutiveErrors) {
            return {
              state: { status: 'suspended', ...next, reason: 'error_threshold', exhaustion: null },
              directives: [...out, emit('session.suspended', { sessionId: id, reason: 'error_threshold', budget: null, errors: next.errorStreak })],
            };
          }
          return work(next, out);
        }
        case 'paused': {
          const exhaustion = exhaustionOf(next) ?? ceilingHit(next, r);
          if (exhaustion !== null) return suspend(next, exhaustion, out);
          return { state: { ...state, ...next }, directives: out };
        }
        case 'suspended':
          return { state: { ...state, ...next }, directives: out };
        case 'closing':
          return { state: { ...state, ...next }, directives: [...out, { type: 'cleanup' }] };
        case 'initializing':
        case 'active':
        case 'closed':
        case 'failed':
          return reject(`no turn can finish in state ${state.status}`);
        default:
          return assertNever(state);
      }
    }
    case 'input_requested': {
      if (c.turnId !== event.turnId) return reject(`turn ${event.turnId} is not the turn in flight`);
      if (c.question !== null) return reject(`question ${c.question.callId} is still unanswered`);
      const asked: Common = { ...c, question: { callId: event.callId, question: event.question } };
      const out = [emit('session.input_requested', { sessionId: id, turnId: event.turnId, callId: event.callId, question: event.question })];
      // A paused session stays paused; the question waits with it.
      return { state: state.status === 'paused' ? { ...state, ...asked } : { status: 'awaiting_input', ...asked }, directives: out };
    }
    case 'answer': {
      if (c.turnId === null || c.question === null) return reject('no question is pending');
      const answered: Common = { ...c, question: null };
      return {
        state: state.status === 'paused' ? { ...state, ...answered } : { status: 'processing', ...answered },
        directives: [
          emit('session.input_received', { sessionId: id, turnId: c.turnId, callId: c.question.callId }),
          ...forward(c, { type: 'answer', callId: c.question.callId, text: event.text }),
        ],
      };
    }
    case 'interrupt': {
      if (c.turnId === null) return reject('no turn is running');
      const reason = event.reason ?? 'interrupted by the user';
      const out = [emit('session.control', { sessionId: id, signal: 'interrupt', turnId: c.turnId }), ...forward(c, { type: 'interrupt', reason })];
      const interrupted: Common = { ...c, question: null };
      return { state: state.status === 'paused' ? { ...state, ...interrupted } : { status: 'processing', ...interrupted }, directives: out };
    }
    case 'steer':
      if (c.turnId === null) return reject('no turn is running to steer; send a message instead');
      return { state, directives: [emit('session.control', { sessionId: id, signal: 'steer', turnId: c.turnId }), ...forward(c, { type: 'steer', text: event.text })] };
    case 'pause': {
      const reason = event.reason ?? 'paused by the user';
      return { state: { status: 'paused', ...c, reason }, directives: [emit('session.paused', { sessionId: id, reason })] };
    }
    case 'stop': {
      const out: D[] = [emit('session.control', { sessionId: id, signal: 'stop', turnId: c.turnId }), ...forward(c, { type: 'interrupt', reason: 'stopped by the user' })];
      if (state.status === 'suspended' || state.status === 'closing') return { state: { ...state, question: null }, directives: out };
      // A session created with nothing to spend is suspended, not paused (a resume could not run anything).
      const spent = state.status === 'initializing' ? exhaustionOf(c) : null;
      if (spent !== null) return suspend(c, spent, out);
      // Stopped while loading its tools: paused, and the pending `initialized` keeps it so.
      const reason = state.status === 'initializing' || (state.status === 'paused' && state.reason === STOPPED_INITIALIZING) ? STOPPED_INITIALIZING : 'stopped';
      out.push(emit('session.paused', { sessionId: id, reason }));
      return { state: { status: 'paused', ...c, question: null, reason }, directives: out };
    }
    case 'resume':
    case 'reset':
    case 'restart': {
      if (state.status === 'paused' && event.type === 'resume') {
        if (state.reason === STOPPED_INITIALIZING) return reject('the session is still loading its tools; resume when it has');
        return work(c, [emit('session.resumed', { sessionId: id })]);
      }
      if (state.status !== 'suspended') return reject('the session is not suspended');
      // Without its tools and policy there is nothing to resume: setup runs again.
      if (state.reason === 'setup' && event.type !== 'restart') return reject(`the session's setup failed (${state.error ?? 'see its events'}): restart it once that is fixed`);
      const exhaustion = exhaustionOf(c);
      if (exhaustion !== null) {
        return reject(`the ${exhaustion.limit} budget is exhausted (${exhaustion.used} of ${exhaustion.allowed}); raise_budget first`);
      }
      const cleared: Common = event.type === 'resume' ? c : { ...c, errorStreak: 0 };
      const out: D[] = [emit('session.unsuspended', { sessionId: id, via: event.type })];
      if (event.type !== 'restart') return work(cleared, out);
      if (c.turnId !== null) return reject('a turn is still finishing; restart when it has');
      return { state: { status: 'initializing', ...cleared }, directives: [...out, emit('session.restarting', { sessionId: id }), { type: 'initialize' }] };
    }
    case 'raise_budget':
      return raiseBudget(state, c, event.limits, event.at);
    case 'close':
      return close(c, event.reason ?? 'requested', []);
    case 'cleanup_done':
      if (c.turnId !== null) return reject('a turn is still finishing');
      return {
        state: { status: 'closed', ...c, reason: state.status === 'closing' ? state.reason : 'requested' },
        directives: [
          emit('session.closed', { sessionId: id, finalStats: statsOf(c) }),
          { type: 'complete', outcome: 'closed', reason: state.status === 'closing' ? state.reason : 'requested', stats: statsOf(c) },
        ],
      };
    case 'timer_fired': {
      if (event.timerId === c.idleTimerId && state.status !== 'initializing' && state.status !== 'processing') {
        return close({ ...c, idleTimerId: null }, 'timeout', []);
      }
      if (event.timerId !== c.deadlineTimerId) return reject(`timer ${event.timerId} is not running`);
      const expired: Common = { ...c, clockExpired: true, deadlineTimerId: null };
      const exhaustion = exhaustionOf(expired);
      if (exhaustion === null) return reject('no wall-clock limit is set');
      const out = forward(c, { type: 'interrupt', reason: 'the wall-clock budget is exhausted' });
      if (state.status === 'suspended') return { state: { ...state, ...expired }, directives: [...out, emit('budget.exhausted', { ...exhaustion, scope: `session ${id}` })] };
      return suspend(expired, exhaustion, out);
    }
    default:
      return assertNever(event);
  }
}
