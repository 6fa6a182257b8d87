// The session's `awaitTurn` update: `send` waits here for its own message's turn, by id.
// It completes when that turn has finished; answers `moved` when the run is handing over
// (the client asks the next run); fails when the message will get no turn.
import { ApplicationFailure, condition, setHandler } from '@temporalio/workflow';
import { awaitTurnSchema, awaitTurnUpdate, type AwaitTurnResult } from './definitions';
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
}

export function awaitTurnHandler(turns: FinishedTurns, h: AwaitTurnHost): void {
  const known = (messageId: string) => turns.has(messageId) || h.queued().includes(messageId) || turns.running(h.turnId()) === messageId;
  setHandler(
    awaitTurnUpdate,
    async (raw): Promise<AwaitTurnResult> => {
      const { messageId } = parse(awaitTurnSchema, raw, 'awaitTurn');
      await condition(() => turns.has(messageId) || h.ended() || h.handingOver() || !known(messageId));
      const turn = turns.get(messageId);
      if (turn) return { kind: 'finished', ...turn };
      if (h.handingOver() && !h.ended()) return { kind: 'moved' };
      throw ApplicationFailure.create({ type: 'MessageDropped', nonRetryable: true, message: `message ${messageId} will get no turn: the session is ${h.status()}` });
    },
    {
      validator: (raw) => {
        const { messageId } = validated(() => parse(awaitTurnSchema, raw, 'awaitTurn'));
        if (!known(messageId)) throw refusal('unknown_message', `unknown message id ${messageId}: not queued, running or among the last ${turns.capacity} finished turns`);
      },
    },
  );
}
