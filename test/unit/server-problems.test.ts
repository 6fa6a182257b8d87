// What the API answers for each failure a client call can meet: a request no worker took in
// time is a 504 naming the workflow (schemathesis found it as a 500 in CI, under load).
import { ServiceError, WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it, vi } from 'vitest';
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

  it("a validator's refusal code reaches the SDK's error and the problem; a plain Error's does not pretend to be one", () => {
    const cause = ApplicationFailure.create({ type: 'rule_does_not_cover', message: 'approve: rule "write_file(b)" does not cover the call being approved (write_file {"path":"a"})' });
    const refused = toKeelError(new WorkflowUpdateFailedError('failed', cause), 'goal-1', 'approve');
    expect(refused).toMatchObject({ code: 'rule_does_not_cover', reason: cause.message });
    expect(toProblem(refused).toProblem()).toMatchObject({ status: 409, code: 'rule_does_not_cover', reason: cause.message });
    const plain = toKeelError(new WorkflowUpdateFailedError('failed', ApplicationFailure.create({ type: 'Error', message: 'x' })), 'goal-1', 'approve');
    expect(plain).toMatchObject({ code: undefined });
    expect(toProblem(plain).toProblem()).not.toHaveProperty('code');
  });

  it('a query Temporal refused as busy is a 503; any other gRPC status stays a 500 whose log line names the status', () => {
    const grpc = (code: number, details: string) => Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });
    // The SDK wraps a failed query as ServiceError('Failed to query Workflow'), the gRPC error as its cause.
    const busy = new ServiceError('Failed to query Workflow', { cause: grpc(8, 'namespace rate limit exceeded') });
    expect(toProblem(busy)).toMatchObject({ status: 503 });
    const logged = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    try {
      expect(toProblem(new ServiceError('Failed to query Workflow', { cause: grpc(13, 'query failed') })).status).toBe(500);
      expect(logged).toHaveBeenCalledWith('keel serve: unexpected error: Failed to query Workflow (gRPC 13: query failed)');
    } finally {
      logged.mockRestore();
    }
  });
});
