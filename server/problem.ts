// Errors as RFC 9457 problem details (application/problem+json): a stable `type` per
// kind of failure, the field that was wrong (`errors[].pointer`) or the workflow's reason.
import type { z } from 'zod';
import type { Problem } from './schemas';

export type ProblemType = 'validation' | 'unauthorized' | 'not-found' | 'method-not-allowed' | 'rejected' | 'unavailable' | 'timeout' | 'internal' | 'unsupported-media-type' | 'too-large' | 'idempotency-key-reused';

const TITLES: Record<ProblemType, string> = {
  validation: 'The request is not valid',
  unauthorized: 'A valid bearer token is required',
  'not-found': 'Not found',
  'method-not-allowed': 'Method not allowed',
  rejected: 'The workflow refused the request',
  unavailable: 'Temporal cannot be reached',
  timeout: 'No worker answered in time',
  internal: 'Internal error',
  'unsupported-media-type': 'The body must be JSON',
  'too-large': 'The body is too large',
  'idempotency-key-reused': 'The Idempotency-Key was used for another request',
};

export class ProblemError extends Error {
  constructor(
    readonly status: number,
    readonly problemType: ProblemType,
    detail: string,
    readonly extra: Pick<Problem, 'errors' | 'reason' | 'code'> = {},
  ) {
    super(detail);
  }

  toProblem(instance?: string): Problem {
    return {
      type: `https://keel.dev/problems/${this.problemType}`,
      title: TITLES[this.problemType],
      status: this.status,
      detail: this.message,
      ...(instance ? { instance } : {}),
      ...this.extra,
    };
  }
}

/** A zod failure as a 400 naming each field (as a JSON pointer under `where`). */
export function validationProblem(error: z.ZodError, where: 'body' | 'query' | 'path' | 'header'): ProblemError {
  const errors = error.issues.map((i) => ({ pointer: `/${[where, ...i.path.map(String)].join('/')}`, message: i.message }));
  return new ProblemError(400, 'validation', errors.map((e) => `${e.pointer}: ${e.message}`).join('; '), { errors });
}
