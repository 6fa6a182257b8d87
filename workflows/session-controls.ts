// The session's controls that are both a signal and an update and go straight to the session
// machine: interrupt, pause, close, resume, stop, reset, restart, steer, answer, raiseBudget.
import type { SessionDirective, SessionEvent, SessionState } from '../machines/session';
import type { Driven } from './host';
import {
  answerSchema,
  answerSignal,
  answerUpdate,
  closeSignal,
  closeUpdate,
  interruptSignal,
  interruptUpdate,
  pauseSignal,
  pauseUpdate,
  raiseBudgetSchema,
  raiseBudgetSignal,
  raiseBudgetUpdate,
  resetSignal,
  resetUpdate,
  restartSignal,
  restartUpdate,
  resumeSignal,
  resumeUpdate,
  steerSchema,
  steerSignal,
  steerUpdate,
  stopSignal,
  stopUpdate,
  type ControlResult,
} from './definitions';
import { parseBareControl, parsePayload as parse, parseReasonControl } from './payloads';
import { refusesBareReasonControls } from './run-format';

export interface SessionControlHost {
  session: Driven<SessionState, SessionEvent, SessionDirective>;
  now: () => number;
  status: () => ControlResult;
  authenticatedControls: boolean | undefined;
}

export function sessionControls({ session, now, status, authenticatedControls }: SessionControlHost): void {
  const reasonOf = (raw: unknown, name: string) => parseReasonControl(raw, name, authenticatedControls === true && refusesBareReasonControls());
  session.control('interrupt', interruptSignal, interruptUpdate, (raw) => ({ type: 'interrupt', ...reasonOf(raw, 'interrupt') }), status);
  session.control('pause', pauseSignal, pauseUpdate, (raw) => ({ type: 'pause', ...reasonOf(raw, 'pause') }), status);
  session.control('close', closeSignal, closeUpdate, (raw) => ({ type: 'close', ...reasonOf(raw, 'close') }), status);
  session.control('resume', resumeSignal, resumeUpdate, (raw) => (parseBareControl(raw, 'resume', authenticatedControls), { type: 'resume' }), status);
  session.control('stop', stopSignal, stopUpdate, (raw) => (parseBareControl(raw, 'stop', authenticatedControls), { type: 'stop' }), status);
  session.control('reset', resetSignal, resetUpdate, (raw) => (parseBareControl(raw, 'reset', authenticatedControls), { type: 'reset' }), status);
  session.control('restart', restartSignal, restartUpdate, (raw) => (parseBareControl(raw, 'restart', authenticatedControls), { type: 'restart' }), status);
  session.control('steer', steerSignal, steerUpdate, (raw) => ({ type: 'steer', text: parse(steerSchema, raw, 'steer').text }), status);
  session.control('answer', answerSignal, answerUpdate, (raw) => ({ type: 'answer', text: parse(answerSchema, raw, 'answer').text }), status);
  session.control(
    'raiseBudget',
    raiseBudgetSignal,
    raiseBudgetUpdate,
    (raw) => ({ type: 'raise_budget', limits: Object.fromEntries(Object.entries(parse(raiseBudgetSchema, raw, 'raiseBudget')).filter(([, v]) => v !== undefined)), at: now() }),
    status,
  );
}
