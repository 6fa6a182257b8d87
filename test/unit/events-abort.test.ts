import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { followStream } from '../../client/events';

// A client whose stream read (the keel.stream query) hangs until the test makes it fail (a
// connection dropping, a busy worker's deadline), so the failure comes after the reader has aborted.
function hangingClient(): { client: Client; fail: () => void; polls: () => number } {
  let polls = 0;
  const waiting: Array<(error: Error) => void> = [];
  const handle = {
    workflowId: 'wf',
    query: () => {
      polls++;
      return new Promise((_, reject) => waiting.push(reject));
    },
    describe: () => Promise.resolve({ status: { name: 'RUNNING' } }),
  };
  const client = { workflow: { getHandle: () => handle }, connection: { withDeadline: <R>(_deadline: number, fn: () => Promise<R>) => fn(), withAbortSignal: <R>(_signal: AbortSignal, fn: () => Promise<R>) => fn() } } as unknown as Client;
  return { client, fail: () => waiting.splice(0).forEach((reject) => reject(new Error('connection dropped'))), polls: () => polls };
}

describe('events() aborted', () => {
  it('ends at once, and the poll it leaves running fails later without an unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const { client, fail, polls } = hangingClient();
      const abort = new AbortController();
      const items = followStream(client, 'wf', { signal: abort.signal });
      const next = items.next();
      // Its first poll is out (and hangs).
      await expect.poll(() => polls(), { timeout: 10_000 }).toBe(1);
      abort.abort();
      await expect(next).resolves.toEqual({ done: true, value: undefined });
      fail();
      // Let the rejection settle and Node's unhandled-rejection check run.
      await new Promise((r) => setTimeout(r, 50));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
