// A goal started or found by KeelClient: its controls (updates, so a refusal comes back as
// UpdateRejectedError with the machine's reason), its queries, its stream and its result.
import { type Client, WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import type { UpdateDefinition } from '@temporalio/common';
import {
  GOAL_CONTROLS,
  goalEventsQuery,
  goalPendingApprovalsQuery,
  goalStateQuery,
  goalUsageQuery,
  planQuery,
  type GoalApprovalResult,
  type GoalControlResult,
  type GoalLogEntry,
  type GoalPendingApproval,
  type GoalStateView,
  type GoalUsageView,
  type PlanView,
} from '../workflows/definitions';
import type { GoalResult, goalWorkflow } from '../workflows/goal';
import { mapErrors, WorkflowEndedError } from './errors';
import { followStream, type EventsOptions, type GoalStreamItem } from './events';
import { queryOnce } from './closed-run-answers';

export class GoalHandle {
  readonly workflowHandle: WorkflowHandle<typeof goalWorkflow>;

  constructor(
    private readonly client: Client,
    readonly id: string,
  ) {
    this.workflowHandle = client.workflow.getHandle<typeof goalWorkflow>(id);
  }

  private call<T>(name: string, body: () => Promise<T>): Promise<T> {
    return mapErrors(this.id, name, body);
  }

  /** The goal's stream: the event log and the model's streamed text, resumable by offset. */
  events(options?: EventsOptions): AsyncGenerator<GoalStreamItem> {
    return followStream<GoalLogEntry>(this.client, this.id, options);
  }

  /** The event log by query (works after the goal ended too). */
  log(from = 0, limit = 500): Promise<{ firstAvailable: number; entries: GoalLogEntry[] }> {
    return this.call('events', () => queryOnce(this.client, this.id, goalEventsQuery, { from, limit }));
  }

  /** A control as an update (GOAL_CONTROLS): its payload typed by the control's schema, a refusal named after it. */
  private control<R, I>(control: { name: string; update: UpdateDefinition<R, [I]> }, input: I): Promise<R> {
    return this.call(control.name, () => this.workflowHandle.executeUpdate(control.update, { args: [input] }));
  }

  /** Carries `{}`: encryption authenticates it (workflows/payloads.ts). */
  approvePlan(): Promise<GoalControlResult> {
    return this.control(GOAL_CONTROLS.approvePlan, {});
  }

  rejectPlan(feedback: string): Promise<GoalControlResult> {
    return this.control(GOAL_CONTROLS.rejectPlan, { feedback });
  }

  resolveTask(taskId: string, action: 'retry' | 'skip' | 'edit', instructions?: string): Promise<GoalControlResult> {
    return this.control(GOAL_CONTROLS.resolveTask, { taskId, action, ...(instructions !== undefined ? { instructions } : {}) });
  }

  /** Approves a task agent's tool call waiting for a human. */
  approve(callId: string, options: { scope?: 'once' | 'session'; approver?: string; rule?: string } = {}): Promise<GoalApprovalResult> {
    return this.control(GOAL_CONTROLS.approve, { callId, ...options, proven: true });
  }

  deny(callId: string, reason?: string): Promise<GoalApprovalResult> {
    return this.control(GOAL_CONTROLS.deny, { callId, ...(reason ? { reason } : {}) });
  }

  cancel(reason?: string): Promise<GoalControlResult> {
    return this.control(GOAL_CONTROLS.cancel, reason ? { reason } : {});
  }

  state(): Promise<GoalStateView> {
    return this.call('state', () => queryOnce(this.client, this.id, goalStateQuery));
  }

  plan(): Promise<PlanView> {
    return this.call('plan', () => queryOnce(this.client, this.id, planQuery));
  }

  usage(): Promise<GoalUsageView> {
    return this.call('usage', () => queryOnce(this.client, this.id, goalUsageQuery));
  }

  pendingApprovals(): Promise<GoalPendingApproval[]> {
    return this.call('pendingApprovals', () => queryOnce(this.client, this.id, goalPendingApprovalsQuery));
  }

  /** Waits for the goal to end: the report (verdict `goal_met` or `stopped`). */
  result(): Promise<GoalResult> {
    return this.call('result', async () => {
      try {
        return await this.workflowHandle.result();
      } catch (error) {
        if (error instanceof WorkflowFailedError) throw new WorkflowEndedError(`goal ${this.id} ended without a report: ${error.cause?.message ?? error.message}`, { cause: error });
        throw error;
      }
    });
  }
}
