// How an update validator refuses: an ApplicationFailure whose type is the refusal's code (the
// machine's TransitionError code, or approvalFrom's), so a client tells refusals apart by code
// (UpdateRejectedError.code, the API problem's `code`) without reading messages.
import { ApplicationFailure } from '@temporalio/workflow';
import type { TransitionError } from '../machines/index';

export function refusal(code: string, message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: code, message, nonRetryable: true });
}

/** A machine's refusal, as a validator throws it. */
export function machineRefusal(error: TransitionError): ApplicationFailure {
  return refusal(error.code, error.message);
}

/** A payload the validator could not even read (parsePayload's TypeError). */
export function payloadRefusal(error: unknown): ApplicationFailure {
  return error instanceof ApplicationFailure ? error : refusal('invalid_payload', (error as Error).message);
}

/** Runs a validator's step; what it throws leaves as an ApplicationFailure with a code. */
export function validated<T>(step: () => T): T {
  try {
    return step();
  } catch (error) {
    throw payloadRefusal(error);
  }
}
