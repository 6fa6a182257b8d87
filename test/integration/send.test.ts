// `SessionHandle.send()` is one `sendMessage` update per turn: the message is posted and
// its own turn awaited in the same update (two history events a turn, not four). Across
// continue-as-new it answers `moved` and the wait goes on in the next run (awaitTurn); a
// refused message is refused with the machine's reason; a worker that has no
// `sendMessage` gets `userMessage` + `awaitTurn` as before.
import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { KeelClient, UpdateRejectedError } from '../../client/index';
import { sendMessageUpdate, userMessageSignal, userMessageUpdate } from '../../workflows/definitions';
import { recordHistory, say, sessionEnv, waitUntil as waitFor } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();

/** The names of the updates a run's history accepted, in order. */
async function acceptedUpdates(handle: WorkflowHandle): Promise<string[]> {
  const { events } = await handle.fetchHistory();
  return (events ?? []).flatMap((e) => {
    const name = e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name;
    return name ? [name] : [];
  });
}

describe('send(): one update per turn', () => {
  it('three turns are three sendMessage updates; identical texts resolve with their own turns; one message id sent twice is one turn; a refused message posts nothing; paused, send() waits for resume', async () => {
    const s = await sessionEnv(env, workflowBundle, { rules: [{ match: { lastUserContains: 'hello' }, reply: say('Hi!') }, { match: {}, reply: say('Sure.') }] });
    await s.run(async () => {
      const keel = await KeelClient.connect({ client: env.client, taskQueue: s.taskQueue });
      const session = await keel.startSession({ workspace: s.workspace });
      const first = await session.send('hello');
      const [a, b] = await Promise.all([session.send('again'), session.send('again')]);
      expect([first.outcome, first.output]).toEqual(['completed', 'Hi!']);
      expect([a.output, b.output]).toEqual(['Sure.', 'Sure.']);
      expect(new Set([first.messageId, a.messageId, b.messageId, a.turnId, b.turnId]).size).toBe(5);
      expect(await acceptedUpdates(session.workflowHandle)).toEqual(['sendMessage', 'sendMessage', 'sendMessage']);

      // Sent twice with one message id (a client asking again after no answer in time): one
      // turn, and both answers are that turn.
      const twice = await Promise.all([1, 2].map(() => session.workflowHandle.executeUpdate(sendMessageUpdate, { args: [{ text: 'once', messageId: 'msg-once' }] })));
      expect(twice.map((t) => t.kind === 'finished' && t.turnId)).toEqual([twice[0]!.kind === 'finished' && twice[0]!.turnId, twice[0]!.kind === 'finished' && twice[0]!.turnId]);
      expect((await session.state()).session.turns).toBe(4);
      // A malformed payload is refused even when it names a message the session has.
      const malformed = await session.workflowHandle.executeUpdate(sendMessageUpdate, { args: [{ text: 42, messageId: 'msg-once' } as never] }).catch((e: unknown) => e);
      expect(malformed).toBeInstanceOf(WorkflowUpdateFailedError);
      expect(String((malformed as WorkflowUpdateFailedError).cause?.message)).toMatch(/sendMessage/);

      // A message the session refuses is refused by the update's validator: nothing posted.
      const refused = await session.send('').catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(UpdateRejectedError);
      expect((await session.state()).session.turns).toBe(4);

      // Paused, the message waits in the queue and send() with it; resumed, it resolves.
      await session.pause('lunch');
      let resolved = false;
      const waiting = session.send('hello').then((o) => ((resolved = true), o));
      const paused = await waitFor(() => session.state(), (v) => v.queueLength === 1);
      expect([paused.status, resolved]).toEqual(['paused', false]);
      await session.resume();
      expect((await waiting).output).toBe('Hi!');
      expect(await acceptedUpdates(session.workflowHandle)).toEqual(['sendMessage', 'sendMessage', 'sendMessage', 'sendMessage', 'sendMessage', 'pause', 'sendMessage', 'resume']);

      // post() with a message id, posted again (the HTTP API's caller retrying after a lost
      // reply): one message, one turn.
      const posted = await Promise.all([1, 2].map(() => session.post('posted twice', 'msg-posted')));
      expect(posted.map((p) => p.messageId)).toEqual(['msg-posted', 'msg-posted']);
      expect((await session.turnOf('msg-posted')).output).toBe('Sure.');
      expect((await session.state()).session.turns).toBe(6);
      expect((await acceptedUpdates(session.workflowHandle)).filter((name) => name === 'userMessage')).toEqual(['userMessage']);
      await session.close();
    });
  });

  it('userMessage with a message id the session has (a signal sent twice, an update under a new update id) is no second turn: the signal is refused by name', async () => {
    const s = await sessionEnv(env, workflowBundle, { rules: [{ match: {}, reply: say('Sure.') }] });
    await s.run(async () => {
      const keel = await KeelClient.connect({ client: env.client, taskQueue: s.taskQueue });
      const session = await keel.startSession({ workspace: s.workspace });
      const handle = session.workflowHandle;
      // `temporal workflow signal` run twice, or a client retrying a signal it got no answer to.
      await handle.signal(userMessageSignal, { text: 'signalled', messageId: 'msg-signalled' });
      expect((await session.turnOf('msg-signalled')).output).toBe('Sure.');
      await handle.signal(userMessageSignal, { text: 'signalled', messageId: 'msg-signalled' });
      // The same message id as an update with an update id of its own (Temporal de-duplicates by update id only).
      const repeat = await handle.executeUpdate(userMessageUpdate, { args: [{ text: 'signalled', messageId: 'msg-signalled' }], updateId: 'another-update-id' });
      expect(repeat.messageId).toBe('msg-signalled');
      // A later message is answered; nothing came between.
      expect((await session.send('next')).output).toBe('Sure.');
      expect((await session.state()).session.turns).toBe(2);
      const rejected: string[] = [];
      let finished = 0;
      for await (const item of session.events({ topics: ['events'] })) {
        const e = item.data as { kind?: string; message?: string; source?: string };
        if (e.kind === 'event.rejected') rejected.push(`${e.source}: ${e.message}`);
        if (e.kind === 'session.turn_finished' && ++finished === 2) break;
      }
      expect(rejected).toEqual(['signal userMessage: message msg-signalled was already received (queued, running or answered): one message id is one turn']);
      await session.close();
      await recordHistory(handle, 'user-message-once');
    });
  });

  it('a send() whose turn falls in the next run resolves there, in order, nothing lost', async () => {
    const rules = Array.from({ length: 4 }, (_, i) => ({ match: { lastUserContains: `message ${i + 1}.` }, reply: say(`Answer ${i + 1}.`, { delayMs: 300 }) }));
    const s = await sessionEnv(env, workflowBundle, { rules });
    await s.run(async () => {
      const keel = await KeelClient.connect({ client: env.client, taskQueue: s.taskQueue });
      const session = await keel.startSession({ workspace: s.workspace, continueAsNewAfterTurns: 1 });
      const outcomes = await Promise.all([1, 2, 3, 4].map((i) => session.send(`message ${i}.`)));
      expect(outcomes.map((o) => [o.outcome, o.output])).toEqual([1, 2, 3, 4].map((i) => ['completed', `Answer ${i}.`]));
      const state = await session.state();
      expect(state.session.turns).toBe(4);
      expect(state.run).toBeGreaterThan(1);
      await session.close();
    });
  });
});
