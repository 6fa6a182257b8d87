// Every update validator of a session refuses with an ApplicationFailure whose type is the
// refusal's code — not a plain Error a client can only tell apart by its message: an unknown
// message for `awaitTurn`, an unknown call for `clientToolResult`, a payload that is not the
// schema's for `userMessage`. The session is untouched by each. Real worker, dev server,
// stand-in.
import { ApplicationFailure, WorkflowUpdateFailedError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { KeelClient } from '../../client/index';
import { toKeelError, UpdateRejectedError } from '../../client/errors';
import { sessionEnv, waitUntil } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();

/** The refusal's code and message, as the Temporal client and Keel's client see them. */
async function refused(p: Promise<unknown>, update: string): Promise<{ type: string | undefined; code: string | undefined; message: string }> {
  const error = await p.catch((e: unknown) => e);
  expect(error).toBeInstanceOf(WorkflowUpdateFailedError);
  const cause = (error as WorkflowUpdateFailedError).cause;
  expect(cause).toBeInstanceOf(ApplicationFailure);
  const keel = toKeelError(error, 'session', update);
  expect(keel).toBeInstanceOf(UpdateRejectedError);
  return { type: (cause as ApplicationFailure).type ?? undefined, code: (keel as UpdateRejectedError).code, message: String(cause?.message) };
}

describe('session update validators', () => {
  it('refuse with a code: unknown_message, unknown_call, invalid_payload; the session goes on', async () => {
    const s = await sessionEnv(env, workflowBundle, { rules: [{ match: {}, reply: { content: [{ type: 'text', text: 'ok' }] } }] });
    await s.run(async () => {
      const keel = await KeelClient.connect({ client: env.client, taskQueue: s.taskQueue });
      const session = await keel.startSession({ workspace: s.workspace, policy: { mode: 'ask' } });
      await waitUntil(() => session.state(), (st) => st.status === 'active', 30_000, 'session ready');
      const handle = env.client.workflow.getHandle(session.id);

      const unknownMessage = await refused(handle.executeUpdate('awaitTurn', { args: [{ messageId: 'msg-nope' }] }), 'awaitTurn');
      expect(unknownMessage).toMatchObject({ type: 'unknown_message', code: 'unknown_message' });
      expect(unknownMessage.message).toMatch(/unknown message id msg-nope/);
      const unknownCall = await refused(handle.executeUpdate('clientToolResult', { args: [{ callId: 'toolu_nope', output: 'x' }] }), 'clientToolResult');
      expect(unknownCall).toMatchObject({ type: 'unknown_call', code: 'unknown_call' });
      expect(unknownCall.message).toMatch(/unknown call id toolu_nope: no client tool call is waiting/);
      expect(await refused(handle.executeUpdate('userMessage', { args: [{ text: 5 }] }), 'userMessage')).toMatchObject({ type: 'invalid_payload', code: 'invalid_payload' });

      // Nothing of that reached the session: a message still gets its turn.
      const turn = await session.send('hello');
      expect(turn.outcome).toBe('completed');
    });
  });
});
