// The goal's controls: approvePlan, rejectPlan, resolveTask and cancel go to the autonomy
// machine; approve / deny go to the task agent whose call it is (workflows/goal-agents.ts).
import { setHandler } from '@temporalio/workflow';
import type { GoalDirective, GoalEvent, GoalState, TransitionError } from '../machines/index';
import {
  approvePlanSignal,
  approvePlanUpdate,
  cancelSignal,
  cancelUpdate,
  denySchema,
  goalApproveSignal,
  goalApproveUpdate,
  goalDenySignal,
  goalDenyUpdate,
  rejectPlanSchema,
  rejectPlanSignal,
  rejectPlanUpdate,
  resolveTaskSchema,
  resolveTaskSignal,
  resolveTaskUpdate,
  type GoalControlResult,
} from './definitions';
import { failureMessage, parseBareControl, parsePayload as parse, parseReasonControl } from './payloads';
import { refusesBareReasonControls } from './run-format';
import { validated } from './refusal';
import type { AgentPool } from './goal-agents';
import type { Driven } from './host';

export interface GoalControlHost {
  goal: Driven<GoalState, GoalEvent, GoalDirective>;
  agents: AgentPool;
  rejected: (source: string, error: TransitionError) => void;
  authenticatedControls: boolean | undefined;
}

export function goalControls({ goal, agents, rejected, authenticatedControls }: GoalControlHost): void {
  const status = (): GoalControlResult => ({ status: goal.state.status });
  goal.control('approvePlan', approvePlanSignal, approvePlanUpdate, (raw) => (parseBareControl(raw, 'approvePlan', authenticatedControls), { type: 'approve_plan' }), status);
  goal.control('rejectPlan', rejectPlanSignal, rejectPlanUpdate, (raw) => ({ type: 'reject_plan', feedback: parse(rejectPlanSchema, raw, 'rejectPlan').feedback }), status);
  goal.control(
    'resolveTask',
    resolveTaskSignal,
    resolveTaskUpdate,
    (raw) => {
      const r = parse(resolveTaskSchema, raw, 'resolveTask');
      return { type: 'resolve_task', taskId: r.taskId, action: r.action, ...(r.instructions !== undefined ? { instructions: r.instructions } : {}) };
    },
    status,
  );
  goal.control(
    'cancel',
    cancelSignal,
    cancelUpdate,
    (raw) => ({ type: 'cancel', ...parseReasonControl(raw, 'cancel', authenticatedControls === true && refusesBareReasonControls()) }),
    status,
  );

  // approve / deny: the agent whose call it is gets the signal, once the validator found the
  // answer acceptable (an update; a signal's refusal is recorded by the agent).
  const parseDenial = (raw: unknown) => validated(() => parse(denySchema, raw, 'deny'));
  const forward = async (kind: 'approve' | 'deny', raw: unknown) => ({ status: goal.state.status, ...(await agents.forward(kind, raw)) });
  const forwardSignal = (kind: 'approve' | 'deny') => (raw: unknown) => {
    forward(kind, raw).catch((error: unknown) => rejected(`signal ${kind}`, { code: 'guard_failed', machine: 'turn', state: goal.state.status, event: kind, message: failureMessage(error) }));
  };
  setHandler(goalApproveSignal, forwardSignal('approve'));
  setHandler(goalDenySignal, forwardSignal('deny'));
  setHandler(goalApproveUpdate, (raw) => forward('approve', raw), { validator: (raw) => agents.mustApprove(raw) });
  setHandler(goalDenyUpdate, (raw) => forward('deny', raw), { validator: (raw) => void agents.findCall(parseDenial(raw).callId) });
}
