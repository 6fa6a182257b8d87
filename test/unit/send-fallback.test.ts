// send() against a worker that predates `sendMessage` (a rolling upgrade): the session's
// default update handler refuses the name with `UnknownUpdate`, and send() posts with
// `userMessage` and waits with `awaitTurn`, as it did before — same message id, one turn.
// The Temporal handle is a stand-in that answers as such a worker does.
import type { Client } from '@temporalio/client';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { expect, it } from 'vitest';
import { SessionHandle } from '../../client/session-handle';
import { WorkflowEndedError } from '../../client/errors';

function olderWorker(dropped = false) {
  const calls: { name: string; args: unknown[] }[] = [];
  const handle = {
    async executeUpdate(def: { name: string } | string, options: { args: unknown[] }) {
      const name = typeof def === 'string' ? def : def.name;
      calls.push({ name, args: options.args });
      const { messageId } = options.args[0] as { messageId: string };
      switch (name) {
        case 'sendMessage':
          throw new WorkflowUpdateFailedError('update failed', ApplicationFailure.nonRetryable('no update named "sendMessage"', 'UnknownUpdate'));
        case 'userMessage':
          return { status: 'active', messageId, queued: false, queueLength: 0 };
        case 'awaitTurn':
          if (dropped) throw new WorkflowUpdateFailedError('update failed', ApplicationFailure.nonRetryable('message will get no turn: the session is closed', 'MessageDropped'));
          return { kind: 'finished', messageId, turnId: 's/turn-1', outcome: 'completed', output: 'Hi!', usage: null };
        default:
          throw new Error(`unexpected update ${name}`);
      }
    },
  };
  const client = { workflow: { getHandle: () => handle } } as unknown as Client;
  return { session: new SessionHandle(client, 's'), calls };
}

it('an older worker: send() falls back to userMessage + awaitTurn with the same message id', async () => {
  const { session, calls } = olderWorker();
  const outcome = await session.send('hello');
  expect(outcome).toMatchObject({ outcome: 'completed', output: 'Hi!' });
  expect(calls.map((c) => c.name)).toEqual(['sendMessage', 'userMessage', 'awaitTurn']);
  const ids = calls.map((c) => (c.args[0] as { messageId: string }).messageId);
  expect(ids[0]).toMatch(/^msg-/);
  expect(new Set(ids).size).toBe(1);
  expect(outcome.messageId).toBe(ids[0]);
});

it('an older worker that drops the message: send() says the turn will not come', async () => {
  const { session } = olderWorker(true);
  await expect(session.send('hello', { messageId: 'm-1' })).rejects.toThrow(WorkflowEndedError);
});

it('an update the workflow task did not take (the server rejects it unseen) is sent again with the same ids, once taken', async () => {
  const calls: { name: string; args: unknown[]; updateId?: string }[] = [];
  const handle = {
    async executeUpdate(def: { name: string }, options: { args: unknown[]; updateId?: string }) {
      calls.push({ name: def.name, args: options.args, updateId: options.updateId });
      const { messageId } = options.args[0] as { messageId: string };
      if (calls.length === 1) {
        throw new WorkflowUpdateFailedError('update failed', ApplicationFailure.create({ message: "Workflow Update is rejected because it wasn't processed by worker. Probably, Workflow Update is not supported by the worker." }));
      }
      return { kind: 'finished', messageId, turnId: 's/turn-1', outcome: 'completed', output: 'Hi!', usage: null };
    },
  };
  const session = new SessionHandle({ workflow: { getHandle: () => handle } } as unknown as Client, 's');
  expect(await session.send('hello', { messageId: 'm-1' })).toMatchObject({ output: 'Hi!' });
  expect(calls.map((c) => [c.name, c.updateId, (c.args[0] as { messageId: string }).messageId])).toEqual([
    ['sendMessage', 'm-1', 'm-1'],
    ['sendMessage', 'm-1', 'm-1'],
  ]);
});
