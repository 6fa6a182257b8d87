// Which failures of a closed run's query are asked again (client/closed-run-answers.ts): a query
// no worker answered before its deadline, however the deadline ended it, and nothing else.
import { ServiceError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { timedOut } from '../../client/closed-run-answers';

/** A gRPC failure as grpc-js gives it (an Error with code, details and metadata), wrapped as the SDK wraps it. */
const failed = (code: number, details: string) =>
  new ServiceError('Failed to query Workflow', { cause: Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} }) });

describe('a closed run query that timed out', () => {
  it('is DEADLINE_EXCEEDED, or CANCELLED by the server resetting the call at the deadline', () => {
    expect(timedOut(failed(4, 'query timed out before a worker could process it'), false)).toBe(true);
    expect(timedOut(failed(1, 'Call cancelled'), false)).toBe(true);
  });

  it("is not the caller's own abort, nor any other failure", () => {
    expect(timedOut(failed(1, 'Call cancelled'), true)).toBe(false);
    for (const code of [3, 5, 9, 13, 14]) expect(timedOut(failed(code, 'other'), false)).toBe(false);
    expect(timedOut(new Error('not gRPC'), false)).toBe(false);
  });
});
