// A session started or found by KeelClient: messages, approvals and controls (updates, so
// a refusal comes back as UpdateRejectedError with the machine's reason), queries, stream.
import { type Client, WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { WorkflowStreamClient } from '@temporalio/workflow-streams/client';
import type { Usage } from '../machines/index';
import {
  answerUpdate,
  approveUpdate,
  closeUpdate,
  denyUpdate,
  eventsQuery,
  interruptUpdate,
  pauseUpdate,
  pendingApprovalsQuery,
  raiseBudgetUpdate,
  resetUpdate,
  resumeUpdate,
  stateQuery,
  steerUpdate,
  stopUpdate,
  transcriptQuery,
  usageQuery,
  userMessageUpdate,
  type ApprovalResult,
  type ControlResult,
  type LogEntry,
  type PendingApproval,
  type RaiseBudgetInput,
  type StateView,
  type TranscriptPage,
  type UsageView,
  type UserMessageResult,
} from '../workflows/definitions';
import type { SessionResult, sessionWorkflow } from '../workflows/session';
import { mapErrors, WorkflowEndedError } from './errors';
import { followStream, type EventsOptions, type SessionStreamItem } from './events';
import { previewText } from '../workflows/preview';

/** How a turn ended, as `send` reports it. */
export interface TurnOutcome {
  messageId: string;
  turnId: string;
  /** How the turn ended (session.turn_finished). */
  outcome: 'completed' | 'max_steps' | 'budget_exhausted' | 'interrupted' | 'failed';
  /** The model's final text, or what it had said when interrupted. */
  output: string | null;
  usage: Usage | null;
}

export class SessionHandle {
  readonly workflowHandle: WorkflowHandle<typeof sessionWorkflow>;

  constructor(
    private readonly client: Client,
    readonly id: string,
  ) {
    this.workflowHandle = client.workflow.getHandle<typeof sessionWorkflow>(id);
  }

  private call<T>(name: string, body: () => Promise<T>): Promise<T> {
    return mapErrors(this.id, name, body);
  }

  events(options?: EventsOptions): AsyncGenerator<SessionStreamItem> {
    return followStream<LogEntry>(this.client, this.id, options);
  }

  log(from = 0, limit = 500): Promise<{ firstAvailable: number; entries: LogEntry[] }> {
    return this.call('events', () => this.workflowHandle.query(eventsQuery, { from, limit }));
  }

  /** The stream's next offset: follow from here to see only what happens from now on. */
  streamOffset(): Promise<number> {
    return this.call('offset', () => WorkflowStreamClient.create(this.client, this.id).getOffset());
  }

  /** Sends a message and returns at once (the message may wait behind a running turn). */
  post(text: string, messageId?: string): Promise<UserMessageResult> {
    return this.call('userMessage', () => this.workflowHandle.executeUpdate(userMessageUpdate, { args: [{ text, ...(messageId ? { messageId } : {}) }] }));
  }

  /**
   * Sends a message and resolves when its turn has finished (after any approvals it waits
   * for), with the outcome and the model's final text.
   */
  async send(text: string, options: { messageId?: string; signal?: AbortSignal } = {}): Promise<TurnOutcome> {
    const from = await this.streamOffset();
    const sent = await this.post(text, options.messageId);
    const wanted = text.trim();
    let turnId: string | null = null;
    let output: string | null = null;
    let usage: Usage | null = null;
    for await (const item of this.events({ from, topics: ['events'], ...(options.signal ? { signal: options.signal } : {}) })) {
      if (item.topic !== 'events') continue;
      const e = item.data;
      if (turnId === null) {
        // The log carries a preview of a long message (workflows/preview.ts).
        if (e.kind === 'turn.started' && e.input.trim() === previewText(wanted)) turnId = e.turnId;
        continue;
      }
      if (e.kind === 'turn.completed' && e.turnId === turnId) {
        output = e.finalOutput;
        usage = e.usage;
      } else if (e.kind === 'turn.interrupted' && e.turnId === turnId) {
        output = e.partialOutput;
      } else if (e.kind === 'session.turn_finished' && e.turnId === turnId) {
        return { messageId: sent.messageId, turnId, outcome: e.outcome as TurnOutcome['outcome'], output, usage };
      }
    }
    throw new WorkflowEndedError(`session ${this.id} ended before the turn of message ${sent.messageId} finished`);
  }

  approve(callId: string, options: { scope?: 'once' | 'session'; approver?: string; rule?: string } = {}): Promise<ApprovalResult> {
    return this.call('approve', () => this.workflowHandle.executeUpdate(approveUpdate, { args: [{ callId, ...options }] }));
  }

  deny(callId: string, reason?: string): Promise<ControlResult> {
    return this.call('deny', () => this.workflowHandle.executeUpdate(denyUpdate, { args: [{ callId, ...(reason ? { reason } : {}) }] }));
  }

  interrupt(reason?: string): Promise<ControlResult> {
    return this.call('interrupt', () => this.workflowHandle.executeUpdate(interruptUpdate, { args: [reason ? { reason } : undefined] }));
  }

  steer(text: string): Promise<ControlResult> {
    return this.call('steer', () => this.workflowHandle.executeUpdate(steerUpdate, { args: [{ text }] }));
  }

  pause(reason?: string): Promise<ControlResult> {
    return this.call('pause', () => this.workflowHandle.executeUpdate(pauseUpdate, { args: [reason ? { reason } : undefined] }));
  }

  resume(): Promise<ControlResult> {
    return this.call('resume', () => this.workflowHandle.executeUpdate(resumeUpdate, { args: [] }));
  }

  stop(): Promise<ControlResult> {
    return this.call('stop', () => this.workflowHandle.executeUpdate(stopUpdate, { args: [] }));
  }

  reset(): Promise<ControlResult> {
    return this.call('reset', () => this.workflowHandle.executeUpdate(resetUpdate, { args: [] }));
  }

  answer(text: string): Promise<ControlResult> {
    return this.call('answer', () => this.workflowHandle.executeUpdate(answerUpdate, { args: [{ text }] }));
  }

  raiseBudget(limits: RaiseBudgetInput): Promise<ControlResult> {
    return this.call('raiseBudget', () => this.workflowHandle.executeUpdate(raiseBudgetUpdate, { args: [limits] }));
  }

  close(reason?: string): Promise<ControlResult> {
    return this.call('close', () => this.workflowHandle.executeUpdate(closeUpdate, { args: [reason ? { reason } : undefined] }));
  }

  state(): Promise<StateView> {
    return this.call('state', () => this.workflowHandle.query(stateQuery));
  }

  usage(): Promise<UsageView> {
    return this.call('usage', () => this.workflowHandle.query(usageQuery));
  }

  pendingApprovals(): Promise<PendingApproval[]> {
    return this.call('pendingApprovals', () => this.workflowHandle.query(pendingApprovalsQuery));
  }

  transcript(from = 0, limit = 100): Promise<TranscriptPage> {
    return this.call('transcript', () => this.workflowHandle.query(transcriptQuery, { from, limit }));
  }

  /** Waits for the session to close. */
  result(): Promise<SessionResult> {
    return this.call('result', async () => {
      try {
        return await this.workflowHandle.result();
      } catch (error) {
        if (error instanceof WorkflowFailedError) throw new WorkflowEndedError(`session ${this.id} failed: ${error.cause?.message ?? error.message}`, { cause: error });
        throw error;
      }
    });
  }
}
