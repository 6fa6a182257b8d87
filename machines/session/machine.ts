// The session's transition table and reducer entry (the idle timer is synced after every step).
import { defineMachine } from '../core';
import { reduce } from './reduce';
import { sessionEventSchema, type SessionDirective, type SessionEvent } from './protocol';
import { sessionStateSchema, type SessionState, type SessionStatus } from './state';
import { syncIdleTimer } from './work';

const S = ['initializing', 'active', 'processing', 'awaiting_input', 'paused', 'suspended', 'closing', 'closed', 'failed'] as const;
const E = [
  'initialized',
  'init_failed',
  'user_message',
  'turn_finished',
  'input_requested',
  'answer',
  'interrupt',
  'steer',
  'pause',
  'resume',
  'stop',
  'reset',
  'restart',
  'raise_budget',
  'close',
  'cleanup_done',
  'timer_fired',
  'call_settled',
] as const;
type Ev = SessionEvent['type'];
const row = (from: SessionStatus, event: Ev, to: SessionStatus, guard?: string) => (guard === undefined ? { from, event, to } : { from, event, to, guard });
const OPEN = ['initializing', 'active', 'processing', 'awaiting_input', 'paused', 'suspended'] as const;
/** Where work may go on next: a running turn, the next queued message, idle, or suspended. */
const toWork = (from: SessionStatus, event: Ev, guard: string) => [
  row(from, event, 'active', `${guard}; queue empty`),
  row(from, event, 'processing', `${guard}; a turn runs or a message is queued`),
  row(from, event, 'suspended', `${guard}; budget exhausted`),
];

export const sessionMachine = defineMachine<SessionState, SessionEvent, SessionDirective>({
  name: 'session',
  states: S,
  events: E,
  terminal: ['closed', 'failed'],
  table: [
    ...toWork('initializing', 'initialized', 'ready'),
    row('initializing', 'init_failed', 'failed', 'recorded before setup failures suspended'),
    row('initializing', 'init_failed', 'suspended', 'setup failed for good: restart once fixed'),
    ...OPEN.filter((s) => s !== 'active').map((s) => row(s, 'user_message', s, 'queued while busy')),
    row('active', 'user_message', 'processing'),
    ...toWork('processing', 'turn_finished', 'this turn'),
    row('processing', 'turn_finished', 'suspended', 'error threshold reached'),
    // The turn can end with its question open (interrupted, cancelled, out of time).
    ...toWork('awaiting_input', 'turn_finished', 'this turn'),
    row('paused', 'turn_finished', 'paused', 'this turn'),
    row('paused', 'turn_finished', 'suspended', 'budget exhausted'),
    row('suspended', 'turn_finished', 'suspended', 'this turn'),
    row('closing', 'turn_finished', 'closing', 'this turn'),
    row('processing', 'input_requested', 'awaiting_input', 'this turn'),
    row('paused', 'input_requested', 'paused', 'the running turn asks'),
    row('awaiting_input', 'answer', 'processing'),
    row('paused', 'answer', 'paused', 'a question is pending'),
    row('processing', 'interrupt', 'processing'),
    row('awaiting_input', 'interrupt', 'processing'),
    row('paused', 'interrupt', 'paused', 'a turn is still running'),
    row('processing', 'steer', 'processing'),
    row('awaiting_input', 'steer', 'awaiting_input'),
    row('paused', 'steer', 'paused', 'a turn is still running'),
    row('active', 'pause', 'paused'),
    row('processing', 'pause', 'paused'),
    ...toWork('paused', 'resume', 'resume').filter((r) => r.to !== 'suspended'),
    ...toWork('suspended', 'resume', 'budget left').filter((r) => r.to !== 'suspended'),
    ...toWork('suspended', 'reset', 'budget left').filter((r) => r.to !== 'suspended'),
    row('suspended', 'restart', 'initializing', 'budget left'),
    // stop from every state that is not terminal (seeds 001, 003): interrupt what runs, and
    // pause where pausing means something; suspended and closing keep their state (resume
    // from a stop must not step over an exhausted budget or undo a close).
    row('initializing', 'stop', 'paused'),
    row('initializing', 'stop', 'suspended', 'budget exhausted'),
    row('active', 'stop', 'paused'),
    row('processing', 'stop', 'paused'),
    row('awaiting_input', 'stop', 'paused'),
    row('paused', 'stop', 'paused'),
    row('suspended', 'stop', 'suspended'),
    row('closing', 'stop', 'closing'),
    row('paused', 'initialized', 'paused', 'stopped while initializing'),
    row('paused', 'init_failed', 'failed', 'stopped while initializing'),
    row('paused', 'init_failed', 'suspended', 'stopped while initializing; setup failed for good'),
    ...OPEN.map((s) => row(s, 'raise_budget', s, s === 'suspended' ? 'still exhausted, or suspended for errors' : undefined)),
    row('suspended', 'raise_budget', 'active', 'budget left; queue empty'),
    row('suspended', 'raise_budget', 'processing', 'budget left; a turn runs or a message is queued'),
    ...OPEN.map((s) => row(s, 'close', 'closing')),
    row('closing', 'cleanup_done', 'closed', 'no turn in flight'),
    ...(['initializing', 'active', 'processing', 'awaiting_input', 'paused'] as const).map((s) => row(s, 'timer_fired', 'suspended', 'wall-clock deadline')),
    row('suspended', 'timer_fired', 'suspended', 'wall-clock deadline'),
    ...(['active', 'awaiting_input', 'paused', 'suspended'] as const).map((s) => row(s, 'timer_fired', 'closing', 'idle timeout')),
    // The usage of an interrupted call is counted whenever its connection closes; a session it
    // exhausts suspends (its running turn interrupted, as by the wall clock).
    ...[...OPEN, 'closing' as const].map((s) => row(s, 'call_settled', s)),
    ...(['active', 'processing', 'awaiting_input', 'paused'] as const).map((s) => row(s, 'call_settled', 'suspended', 'budget exhausted')),
  ],
  stateSchema: sessionStateSchema,
  eventSchema: sessionEventSchema,
  reduce: (state, event) => {
    const step = reduce(state, event);
    return 'reject' in step ? step : syncIdleTimer(step.state, step.directives);
  },
});
