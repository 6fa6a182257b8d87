// A session started or found by KeelClient: messages, approvals and controls (updates, so
// a refusal comes back as UpdateRejectedError with the machine's reason), queries, stream.
import { randomUUID } from 'node:crypto';
import { type Client, WorkflowFailedError, type WorkflowHandle, WorkflowNotFoundError, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowStreamClient } from '@temporalio/workflow-streams/client';
import type { FinishedTurn } from '../workflows/finished-turns';
import type { UpdateDefinition } from '@temporalio/common';
import {
  clientToolResultUpdate,
  awaitTurnUpdate,
  eventsQuery,
  pendingApprovalsQuery,
  sendMessageUpdate,
  SESSION_CONTROLS,
  stateQuery,
  transcriptQuery,
  usageQuery,
  userMessageUpdate,
  type ApprovalResult,
  type AwaitTurnResult,
  type ControlResult,
  type LogEntry,
  type PendingApproval,
  type RaiseBudgetInput,
  type SendMessageResult,
  type StateView,
  type TranscriptPage,
  type UsageView,
  type UserMessageResult,
} from '../workflows/definitions';
import type { SessionResult, sessionWorkflow } from '../workflows/session';
import type { ClientTool } from '../workflows/client-tools';
import { InvalidInputError, mapErrors, toKeelError, WorkflowEndedError } from './errors';
import { messageTooLarge } from '../workflows/protocol/controls';
import { followStream, type EventsOptions, type SessionStreamItem } from './events';
import { queryOnce } from './closed-run-answers';
import { diffTurnsUpdate, rewindUpdate, type CheckpointsView, type RewindResult, type TurnsDiff } from '../workflows/protocol/checkpoints';
import { readCheckpoints } from './checkpoints';

/**
 * How a turn ended, as `send` reports it: the session's record of the turn, whose
 * `outcome` is every outcome of the turn machine (machines/turn/outcome.ts TURN_OUTCOMES),
 * `truncated` and `refused` included, so a `switch` over it is checked to be exhaustive.
 */
export type TurnOutcome = FinishedTurn;

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
    return this.call('events', () => queryOnce(this.client, this.id, eventsQuery, { from, limit }));
  }

  /** The stream's next offset: follow from here to see only what happens from now on. */
  streamOffset(): Promise<number> {
    return this.call('offset', () => WorkflowStreamClient.create(this.client, this.id).getOffset());
  }

  /** Sends a message and returns at once (the message may wait behind a running turn). */
  post(text: string, messageId?: string, options: { clientTools?: ClientTool[] } = {}): Promise<UserMessageResult> {
    const tooLarge = messageTooLarge(text);
    // Refused here, with the limit: sent, it fails in Temporal as "Failed to signal Workflow".
    if (tooLarge !== null) return Promise.reject(new InvalidInputError('userMessage', [tooLarge]));
    const clientTools = options.clientTools?.length ? { clientTools: options.clientTools } : {};
    // With a message id, the update id is the message id: posted again (a caller retrying after
    // a lost reply), the server answers for the same update and the message is queued once.
    return this.call('userMessage', () =>
      this.workflowHandle.executeUpdate(userMessageUpdate, { args: [{ text, ...(messageId ? { messageId } : {}), ...clientTools }], ...(messageId ? { updateId: messageId } : {}) }),
    );
  }

  /** The result of a client tool call (a tool the message's sender declared and ran itself): the turn goes on with it. */
  clientToolResult(callId: string, output: string, options: { isError?: boolean } = {}): Promise<ControlResult> {
    return this.call('clientToolResult', () => this.workflowHandle.executeUpdate(clientToolResultUpdate, { args: [{ callId, output, ...(options.isError ? { isError: true } : {}) }] }));
  }

  /**
   * Sends a message and resolves when its turn has finished (after any approvals it waits
   * for), with the outcome and the model's final text. One `sendMessage` update posts the
   * message and answers with its own turn (by message id, so two identical messages each
   * resolve with their own); a session continuing as new answers `moved`, and the wait goes
   * on in the next run (`awaitTurn`). A worker older than `sendMessage` gets `userMessage`
   * and `awaitTurn`, as before.
   */
  async send(text: string, options: { messageId?: string; signal?: AbortSignal } = {}): Promise<TurnOutcome> {
    const tooLarge = messageTooLarge(text);
    if (tooLarge !== null) throw new InvalidInputError('sendMessage', [tooLarge]);
    const messageId = options.messageId ?? `msg-${randomUUID()}`;
    const aborted = abortPromise(options.signal);
    let answer: SendMessageResult | 'unknown_update';
    try {
      answer = await Promise.race([this.sendMessage(text, messageId), aborted.promise]);
    } finally {
      aborted.dispose();
    }
    if (answer === 'unknown_update') {
      const sent = await this.post(text, messageId);
      return this.turnOf(sent.messageId, options);
    }
    if (answer.kind === 'finished') return outcomeOf(answer);
    return this.turnOf(answer.messageId, options);
  }

  private async sendMessage(text: string, messageId: string, attempt = 1): Promise<SendMessageResult | 'unknown_update'> {
    try {
      // The update id is the message id: asked again, the server answers for the same update.
      return await this.workflowHandle.executeUpdate(sendMessageUpdate, { args: [{ text, messageId }], updateId: messageId });
    } catch (error) {
      // No answer in time (a busy server or worker), or a workflow task that ended without
      // taking the update (the server then rejects it unseen): the same update again, which
      // the server and the workflow both take once (same update id, same message id).
      if (notTaken(error) && attempt < SEND_ATTEMPTS) return this.sendMessage(text, messageId, attempt + 1);
      if (error instanceof WorkflowUpdateFailedError && error.cause instanceof ApplicationFailure) {
        if (error.cause.type === 'UnknownUpdate') return 'unknown_update';
        // Accepted, but the message will get no turn (the session closed or failed first).
        if (error.cause.type === 'MessageDropped') throw new WorkflowEndedError(`session ${this.id}: no turn for message ${messageId}: ${error.cause.message}`, { cause: error });
      }
      if (error instanceof WorkflowNotFoundError) {
        // The run closed while the update waited: a session running on in a new run has the
        // message (handed over), or says it does not (awaitTurn's refusal).
        const running = await this.workflowHandle.describe().then((d) => d.status.name === 'RUNNING', () => false);
        if (running) return { kind: 'moved', messageId };
      }
      // A refusal (the validator's reason), no answer in time, no such session.
      throw toKeelError(error, this.id, 'sendMessage');
    }
  }

  /** Resolves when the turn of a message already sent (`post`) has finished. */
  async turnOf(messageId: string, options: { signal?: AbortSignal } = {}): Promise<TurnOutcome> {
    const aborted = abortPromise(options.signal);
    try {
      for (;;) {
        const answer = await Promise.race([this.awaitTurn(messageId), aborted.promise]);
        if (answer.kind === 'finished') return outcomeOf(answer);
        // The run is handing over: ask the next one (a short pause, not a spin).
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      aborted.dispose();
    }
  }

  private async awaitTurn(messageId: string): Promise<AwaitTurnResult> {
    try {
      return await this.workflowHandle.executeUpdate(awaitTurnUpdate, { args: [{ messageId }] });
    } catch (error) {
      // The handler's own refusal (unknown id, a message that gets no turn) is final.
      if (error instanceof WorkflowUpdateFailedError) {
        throw new WorkflowEndedError(`session ${this.id}: no turn for message ${messageId}: ${error.cause?.message ?? error.message}`, { cause: error });
      }
      // Anything else (the run closed while the update waited): if the session runs on in a
      // new run, ask that one; if it ended, the turn will never come.
      const running = await this.workflowHandle.describe().then((d) => d.status.name === 'RUNNING', () => false);
      if (running) return { kind: 'moved' };
      throw new WorkflowEndedError(`session ${this.id} ended before the turn of message ${messageId} finished`, { cause: error });
    }
  }

  /** A control as an update (SESSION_CONTROLS): its payload typed by the control's schema, a refusal named after it. */
  /**
   * A control as one update with one id (`updateId`, else a new one per call): asked again with
   * the same id — this call's own retry when the update was not taken, or a caller retrying
   * after a lost answer — the server answers for the first and the workflow acts once.
   */
  private control<R, I>(control: { name: string; update: UpdateDefinition<R, [I]> }, input: I, updateId = `${control.name}-${randomUUID()}`): Promise<R> {
    const attempt = async (n: number): Promise<R> => {
      try {
        return await this.workflowHandle.executeUpdate(control.update, { args: [input], updateId });
      } catch (error) {
        if (notTaken(error) && n < SEND_ATTEMPTS) return attempt(n + 1);
        throw error;
      }
    };
    return this.call(control.name, () => attempt(1));
  }

  /** `updateId`: the same approval sent again with it (a retry after a lost answer) is taken once and answered the same. */
  approve(callId: string, options: { scope?: 'once' | 'session'; approver?: string; rule?: string; updateId?: string } = {}): Promise<ApprovalResult> {
    const { updateId, ...rest } = options;
    // `proven`: this client's codec signs the approver (shared/approver-proof.ts).
    return this.control(SESSION_CONTROLS.approve, { callId, ...rest, proven: true }, updateId);
  }

  deny(callId: string, reason?: string): Promise<ControlResult> {
    return this.control(SESSION_CONTROLS.deny, { callId, ...(reason ? { reason } : {}) });
  }

  // A control that names nothing, or no reason, still carries `{}`: encryption authenticates it (workflows/payloads.ts).
  /** `updateId`: the same interrupt sent again with it (a retry after a lost answer) is taken once and answered the same. */
  interrupt(reason?: string, options: { updateId?: string } = {}): Promise<ControlResult> {
    return this.control(SESSION_CONTROLS.interrupt, reason ? { reason } : {}, options.updateId);
  }

  /** Guidance for the running turn; with `agent` (a sub-agent's id, label such as `research-1`, or its call id), for that child's turn. */
  steer(text: string, options: { agent?: string } = {}): Promise<ControlResult> {
    return this.control(SESSION_CONTROLS.steer, { text, ...(options.agent !== undefined ? { agent: options.agent } : {}) });
  }

  pause(reason?: string): Promise<ControlResult> {
    return this.control(SESSION_CONTROLS.pause, reason ? { reason } : {});
  }

  resume(): Promise<ControlResult> {
    return this.control(SESSION_CONTROLS.resume, {});
  }

  stop(): Promise<ControlResult> {
    return this.control(SESSION_CONTROLS.stop, {});
  }

  reset(): Promise<ControlResult> {
    return this.control(SESSION_CONTROLS.reset, {});
  }

  answer(text: string): Promise<ControlResult> {
    return this.control(SESSION_CONTROLS.answer, { text });
  }

  raiseBudget(limits: RaiseBudgetInput): Promise<ControlResult> {
    return this.control(SESSION_CONTROLS.raiseBudget, limits);
  }

  close(reason?: string): Promise<ControlResult> {
    return this.control(SESSION_CONTROLS.close, reason ? { reason } : {});
  }

  /** The turn boundaries and their workspace checkpoints (a session started with `checkpoints`). */
  checkpoints(): Promise<CheckpointsView> {
    return readCheckpoints(this.client, this.id);
  }

  /** Files added, removed and changed between two turns' checkpoints (a set-aside turn too), read on the workspace's host. */
  diff(fromTurn: number, toTurn: number): Promise<TurnsDiff> {
    return this.call('diffTurns', () => this.workflowHandle.executeUpdate(diffTurnsUpdate, { args: [{ from: fromTurn, to: toTurn }] }));
  }

  /**
   * Back to turn `toTurn`'s boundary: later turns set aside (recoverable by fork), files restored
   * unless `files: false`; the session then waits for the next message. A human's call: this
   * client's codec proves it (shared/approver-proof.ts); the model cannot rewind.
   */
  rewind(toTurn: number, options: { files?: boolean; approver?: string } = {}): Promise<RewindResult> {
    const input = { toTurn, files: options.files ?? true, approver: options.approver ?? 'sdk', proven: true, callId: `rewind ${this.id} ${toTurn}` };
    return this.call('rewind', () => this.workflowHandle.executeUpdate(rewindUpdate, { args: [input] }));
  }

  state(): Promise<StateView> {
    return this.call('state', () => queryOnce(this.client, this.id, stateQuery));
  }

  usage(): Promise<UsageView> {
    return this.call('usage', () => queryOnce(this.client, this.id, usageQuery));
  }

  pendingApprovals(): Promise<PendingApproval[]> {
    return this.call('pendingApprovals', () => queryOnce(this.client, this.id, pendingApprovalsQuery));
  }

  transcript(from = 0, limit = 100): Promise<TranscriptPage> {
    return this.call('transcript', () => queryOnce(this.client, this.id, transcriptQuery, { from, limit }));
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

/** A promise that rejects when the signal aborts (never, without one). */
/** sendMessage calls that got no answer in time before send() says so (NoAnswerError). */
const SEND_ATTEMPTS = 3;

/**
 * An update the workflow never took: the call got no answer in time, or the server rejected it
 * because the workflow task that carried it ended without accepting or rejecting it (the
 * worker lost the task, e.g. evicting the run). Seen in the bench: 1 of 40 messages to
 * sessions just replayed after eviction, with 2,000 parked.
 */
function notTaken(error: unknown): boolean {
  if (error instanceof WorkflowUpdateRPCTimeoutOrCancelledError) return true;
  return error instanceof WorkflowUpdateFailedError && /wasn't processed by worker/.test(error.cause?.message ?? '');
}

function outcomeOf(turn: FinishedTurn): TurnOutcome {
  return { messageId: turn.messageId, turnId: turn.turnId, outcome: turn.outcome, output: turn.output, usage: turn.usage };
}

function abortPromise(signal: AbortSignal | undefined): { promise: Promise<never>; dispose(): void } {
  if (!signal) return { promise: new Promise<never>(() => {}), dispose: () => {} };
  let onAbort = () => {};
  const promise = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  promise.catch(() => {});
  return { promise, dispose: () => signal.removeEventListener('abort', onAbort) };
}
