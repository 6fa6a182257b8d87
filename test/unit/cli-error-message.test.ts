// What a failed `keel` command prints (client/cli/common.ts messageOf): the SDK's ServiceError
// with the server's answer from its cause ("keel: Failed to query Workflow" alone, under load,
// left nothing to act on); other errors as they are.
import { ServiceError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { messageOf } from '../../client/cli/common';
import { NotFoundError } from '../../client/errors';

describe('messageOf', () => {
  it("adds a ServiceError's cause", () => {
    const grpc = Object.assign(new Error('4 DEADLINE_EXCEEDED: context deadline exceeded'), { code: 4 });
    expect(messageOf(new ServiceError('Failed to query Workflow', { cause: grpc }))).toBe('Failed to query Workflow: 4 DEADLINE_EXCEEDED: context deadline exceeded');
  });

  it('keeps other errors, and a ServiceError without a cause, as they are', () => {
    expect(messageOf(new ServiceError('Failed to query Workflow'))).toBe('Failed to query Workflow');
    const notFound = new NotFoundError('goal-1', { cause: new Error('workflow not found') });
    expect(messageOf(notFound)).toBe(notFound.message);
    expect(messageOf('plain')).toBe('plain');
  });
});
