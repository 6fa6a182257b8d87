// The session's controls that are both a signal and an update and go straight to the session
// machine: interrupt, pause, close, resume, stop, reset, restart, steer, answer, raiseBudget.
import type { SessionDirective, SessionEvent, SessionState } from '../machines/session';
import { setHandler, type defineUpdate, type SignalDefinition } from '@temporalio/workflow';
import type { Driven } from './host';
import { validated } from './refusal';
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
  /** The session's sub-agents (option `agents`): a steer may address one of them. */
  children?: ChildSteering;
}

/** What a steer addressed to a child needs of the session's sub-agents (workflows/sub-agents.ts). */
export interface ChildSteering {
  /** The running child a name addresses (its id, label or call id), or null. */
  target(name: string): string | null;
  /** Sends the guidance on to that child's workflow. */
  steer(agentId: string, text: string): Promise<void>;
}

export function sessionControls({ session, now, status, authenticatedControls, children }: SessionControlHost): void {
  const reasonOf = (raw: unknown, name: string) => parseReasonControl(raw, name, authenticatedControls === true && refusesBareReasonControls());
  session.control('interrupt', interruptSignal, interruptUpdate, (raw) => ({ type: 'interrupt', ...reasonOf(raw, 'interrupt') }), status);
  session.control('pause', pauseSignal, pauseUpdate, (raw) => ({ type: 'pause', ...reasonOf(raw, 'pause') }), status);
  session.control('close', closeSignal, closeUpdate, (raw) => ({ type: 'close', ...reasonOf(raw, 'close') }), status);
  session.control('resume', resumeSignal, resumeUpdate, (raw) => (parseBareControl(raw, 'resume', authenticatedControls), { type: 'resume' }), status);
  session.control('stop', stopSignal, stopUpdate, (raw) => (parseBareControl(raw, 'stop', authenticatedControls), { type: 'stop' }), status);
  session.control('reset', resetSignal, resetUpdate, (raw) => (parseBareControl(raw, 'reset', authenticatedControls), { type: 'reset' }), status);
  session.control('restart', restartSignal, restartUpdate, (raw) => (parseBareControl(raw, 'restart', authenticatedControls), { type: 'restart' }), status);
  steerControl(session, status, children);
  session.control('answer', answerSignal, answerUpdate, (raw) => ({ type: 'answer', text: parse(answerSchema, raw, 'answer').text }), status);
  session.control(
    'raiseBudget',
    raiseBudgetSignal,
    raiseBudgetUpdate,
    (raw) => ({ type: 'raise_budget', limits: Object.fromEntries(Object.entries(parse(raiseBudgetSchema, raw, 'raiseBudget')).filter(([, v]) => v !== undefined)), at: now() }),
    status,
  );
}

/**
 * `steer`: guidance for the session's running turn or, with `agent`, for a running child's
 * (docs/sub-agents.md "Steering a child"): the session checks the child is running (an update
 * is refused naming it when not) and sends the text on as the child's `steer` signal; the
 * child's turn takes it at its next safe boundary, as the session's does.
 */
function steerControl(session: SessionControlHost['session'], status: () => ControlResult, children: ChildSteering | undefined): void {
  const own = (raw: unknown): SessionEvent => ({ type: 'steer', text: parse(steerSchema, raw, 'steer').text });
  if (children === undefined) return session.control('steer', steerSignal, steerUpdate, own, status);
  /** The child a steer addresses (null: the session's own turn); throws when it names none running. */
  const child = (raw: unknown): { agentId: string; text: string } | null => {
    const s: { text: string; agent?: string } = parse(steerSchema, raw, 'steer');
    if (s.agent === undefined) return null;
    const agentId = children.target(s.agent);
    if (agentId === null) throw new Error(`no sub-agent ${JSON.stringify(s.agent)} of this session is running`);
    return { agentId, text: s.text };
  };
  setHandler(steerSignal as SignalDefinition<[unknown?]>, (raw?: unknown) => {
    let to: { agentId: string; text: string } | null;
    try {
      to = child(raw);
    } catch (error) {
      return session.signalled('steer', () => {
        throw error;
      });
    }
    if (to === null) return session.signalled('steer', () => own(raw));
    void children.steer(to.agentId, to.text);
  });
  setHandler(
    steerUpdate as ReturnType<typeof defineUpdate<ControlResult, [unknown?]>>,
    async (raw?: unknown) => {
      const to = child(raw);
      if (to === null) session.post('update steer', own(raw));
      else await children.steer(to.agentId, to.text);
      return status();
    },
    {
      validator: (raw?: unknown) => {
        if (validated(() => child(raw)) === null) session.mustAccept(validated(() => own(raw)));
      },
    },
  );
}
