// What the API answers for each failure a client call can meet: a request no worker took in
// time is a 504 naming the workflow (schemathesis found it as a 500 in CI, under load).
import { WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { NoAnswerError, toKeelError } from '../../client/errors';
import { exitCodeOf } from '../../client/cli/common';
import { EXIT } from '../../client/cli/output';
import { toProblem } from '../../server/app';

describe('problems of the API', () => {
  it('an update the workflow did not take before the deadline is a 504, and exit 6 in the CLI', () => {
    const error = toKeelError(new WorkflowUpdateRPCTimeoutOrCancelledError('Timeout expired', { cause: new Error('DEADLINE_EXCEEDED') }), 'session-1', 'approve');
    expect(error).toBeInstanceOf(NoAnswerError);
    const p = toProblem(error);
    expect(p.status).toBe(504);
    expect(p.message).toMatch(/approve: session-1 did not answer in time/);
    expect(exitCodeOf(error)).toBe(EXIT.unreachable);
  });

  it('a refusal by the workflow stays a 409 with its reason; an unknown error a 500', () => {
    const refused = toKeelError(new WorkflowUpdateFailedError('failed', ApplicationFailure.create({ message: 'unknown call id x' })), 'session-1', 'approve');
    expect(toProblem(refused)).toMatchObject({ status: 409 });
    expect(toProblem(new Error('boom')).status).toBe(500);
  });
});
