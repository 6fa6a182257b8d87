// How a client waits for its own message's turn, by message id:
// - `sendMessage` posts the message and answers when its turn has finished: one update per
//   turn (`SessionHandle.send`);
// - `awaitTurn` waits for the turn of a message already posted (`turnOf`, and `send` after
//   a handover).
// Both complete when that turn has finished; answer `moved` when the run is handing over
// (the client asks the next run); fail when the message will get no turn.
import { ApplicationFailure, condition, setHandler } from '@temporalio/workflow';
import { awaitTurnSchema, awaitTurnUpdate, sendMessageUpdate, type AwaitTurnResult, type SendMessageResult } from './definitions';
import type { FinishedTurns } from './finished-turns';
import { parsePayload as parse } from './payloads';
import { refusal, validated } from './refusal';

export interface AwaitTurnHost {
  status(): string;
  /** Message ids waiting in the queue. */
  queued(): string[];
  /** The turn the session machine says is in flight. */
  turnId(): string | null;
  ended(): boolean;
  handingOver(): boolean;
  /** The message id a message payload names, if any; throws the refusal a malformed payload gets. */
  messageIdOf(raw: unknown): string | null;
  /** `userMessage`'s validator: throws the refusal a message would get. */
  validateMessage(raw: unknown): void;
  /** Posts a message as `userMessage` does; its id. */
  postMessage(raw: unknown): string;
}

/** Whether the session has this message already: queued, in its running turn, or among the newest finished turns. */
export function messageKnown(turns: FinishedTurns, h: Pick<AwaitTurnHost, 'queued' | 'turnId'>, messageId: string): boolean {
  return turns.has(messageId) || h.queued().includes(messageId) || turns.running(h.turnId()) === messageId;
}

export function awaitTurnHandlers(turns: FinishedTurns, h: AwaitTurnHost): void {
  const known = (messageId: string) => messageKnown(turns, h, messageId);
  const turnOf = async (messageId: string): Promise<AwaitTurnResult> => {
    await condition(() => turns.has(messageId) || h.ended() || h.handingOver() || !known(messageId));
    const turn = turns.get(messageId);
    if (turn) return { kind: 'finished', ...turn };
    if (h.handingOver() && !h.ended()) return { kind: 'moved' };
    throw ApplicationFailure.create({ type: 'MessageDropped', nonRetryable: true, message: `message ${messageId} will get no turn: the session is ${h.status()}` });
  };

  setHandler(awaitTurnUpdate, async (raw) => turnOf(parse(awaitTurnSchema, raw, 'awaitTurn').messageId), {
    validator: (raw) => {
      const { messageId } = validated(() => parse(awaitTurnSchema, raw, 'awaitTurn'));
      if (!known(messageId)) throw refusal('unknown_message', `unknown message id ${messageId}: not queued, running or among the last ${turns.capacity} finished turns`);
    },
  });

  setHandler(
    sendMessageUpdate,
    async (raw): Promise<SendMessageResult> => {
      // Idempotent by message id: a client that sends again after no answer in time (or
      // to the next run, after a hand-over) waits for the turn instead of posting twice.
      const again = h.messageIdOf(raw);
      const messageId = again !== null && known(again) ? again : h.postMessage(raw);
      const answer = await turnOf(messageId);
      return answer.kind === 'moved' ? { kind: 'moved', messageId } : answer;
    },
    {
      // The payload is always checked; the session's rules only for a message it does not have yet.
      validator: (raw) => {
        const again = h.messageIdOf(raw);
        if (again === null || !known(again)) h.validateMessage(raw);
      },
    },
  );
}
