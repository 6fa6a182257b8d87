// Typed errors of the client SDK: what a caller can tell apart without reading messages.
import { ApplicationFailure, WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';

export class KeelError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The workflow refused an update: its validator (the state machine) said why. */
export class UpdateRejectedError extends KeelError {
  /**
   * The refusal's code, when the workflow gave one: the machine's (`guard_failed`,
   * `not_allowed`) or the approval's (`unknown_call`, `rule_does_not_cover`, `invalid_rule`,
   * `rule_needs_session_scope`; machines/approval.ts), or `invalid_payload`.
   */
  readonly code: string | undefined;

  constructor(
    readonly workflowId: string,
    readonly update: string,
    /** The machine's reason, e.g. `unknown call id toolu_x: waiting for approval: toolu_y`. */
    readonly reason: string,
    options?: { cause?: unknown; code?: string | undefined },
  ) {
    super(`${update} rejected by ${workflowId}: ${reason}`, options);
    this.code = options?.code;
  }
}

/** Start options the workflow would refuse; nothing was started. */
export class InvalidInputError extends KeelError {
  constructor(
    readonly operation: string,
    /** One line per problem, naming the field: `maxConcurrency: Too small: expected number to be >0`. */
    readonly problems: string[],
  ) {
    super(`${operation}: invalid options: ${problems.join('; ')}`);
  }
}

/**
 * The id was used before for another request: the caller's request digest (what it asked
 * for) differs from the one the workflow was started with. The HTTP API answers 422, as the
 * IETF Idempotency-Key draft says for a key reused with another payload.
 */
export class IdempotencyKeyReusedError extends KeelError {
  constructor(readonly workflowId: string) {
    super(`${workflowId} was started by another request: an id (Idempotency-Key) is for retrying the same request, use a new one for a new request`);
  }
}

/** No goal or session with this id (in this namespace). */
export class NotFoundError extends KeelError {
  constructor(
    readonly workflowId: string,
    options?: { cause?: unknown },
  ) {
    super(`no goal or session with id ${workflowId}`, options);
  }
}

/** The Temporal server cannot be reached. */
export class ConnectionError extends KeelError {
  constructor(
    readonly address: string,
    options?: { cause?: unknown },
  ) {
    super(`cannot reach Temporal at ${address}; start one with \`keel dev\` or set TEMPORAL_ADDRESS`, options);
  }
}

/**
 * The workflow did not take the update before the call's deadline: no worker polls its task
 * queue, or the worker is too busy. Nothing was applied; the same call may be sent again.
 */
export class NoAnswerError extends KeelError {
  constructor(
    readonly workflowId: string,
    readonly operation: string,
    options?: { cause?: unknown },
  ) {
    super(`${operation}: ${workflowId} did not answer in time: is a Keel worker running on its task queue?`, options);
  }
}

/** A goal or session ended in a way the call cannot use (e.g. `result()` of a failed workflow). */
export class WorkflowEndedError extends KeelError {}

/** Maps what @temporalio/client throws to the SDK's errors; anything else is rethrown as is. */
export function toKeelError(error: unknown, workflowId: string, operation: string): unknown {
  if (error instanceof KeelError) return error;
  if (error instanceof WorkflowUpdateFailedError) {
    const reason = error.cause?.message ?? error.message;
    const code = error.cause instanceof ApplicationFailure && error.cause.type !== 'Error' ? (error.cause.type ?? undefined) : undefined;
    return new UpdateRejectedError(workflowId, operation, reason, { cause: error, code });
  }
  if (error instanceof WorkflowNotFoundError) {
    // An update (or signal) to a workflow that has ended: refused, with that as the reason.
    if (/already completed|closed/i.test(error.message)) return new UpdateRejectedError(workflowId, operation, `${workflowId} has already ended`, { cause: error });
    return new NotFoundError(workflowId, { cause: error });
  }
  if (error instanceof WorkflowUpdateRPCTimeoutOrCancelledError) return new NoAnswerError(workflowId, operation, { cause: error });
  if (error instanceof WorkflowExecutionAlreadyStartedError) return error;
  return error;
}

export async function mapErrors<T>(workflowId: string, operation: string, body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (error) {
    throw toKeelError(error, workflowId, operation);
  }
}
