// Which message each turn answers, and how the newest turns ended: `send` waits on this
// (the awaitTurn update) by message id, so two identical messages each get their own turn.
// Read off the session's own events as they are logged; bounded, and carried across
// continue-as-new.
import type { CallUsage, LogPayloads, TurnEnd, Usage } from '../machines/index';
import { addSettledUsage } from '../machines/budget';

/** How a turn of the session ended, as `awaitTurn` (and the SDK's `send`) report it. */
export interface FinishedTurn {
  messageId: string;
  turnId: string;
  /** Every outcome of the turn machine (machines/turn/outcome.ts), `truncated` and `refused` included. */
  outcome: TurnEnd;
  /** The model's final text, or what it had said when interrupted. */
  output: string | null;
  usage: Usage | null;
}

type Seen =
  | { kind: 'turn.completed'; turnId: string; finalOutput: string | null; usage: Usage }
  | { kind: 'turn.interrupted'; turnId: string; partialOutput: string | null }
  | ({ kind: 'session.turn_finished' } & Pick<LogPayloads['session.turn_finished'], 'turnId' | 'outcome'>);

export class FinishedTurns {
  readonly capacity = 100;
  private readonly messages = new Map<string, string>();
  private readonly ending = new Map<string, { output: string | null; usage: Usage | null }>();
  private readonly done: FinishedTurn[];

  constructor(carried: readonly FinishedTurn[] = []) {
    this.done = [...carried];
  }

  started(turnId: string, messageId: string): void {
    this.messages.set(turnId, messageId);
  }

  running(turnId: string | null): string | undefined {
    return turnId === null ? undefined : this.messages.get(turnId);
  }

  see(event: { kind: string }): void {
    const e = event as Seen;
    if (e.kind === 'turn.completed') this.ending.set(e.turnId, { output: e.finalOutput, usage: e.usage });
    else if (e.kind === 'turn.interrupted') this.ending.set(e.turnId, { output: e.partialOutput, usage: null });
    else if (e.kind === 'session.turn_finished') {
      const messageId = this.messages.get(e.turnId);
      const end = this.ending.get(e.turnId) ?? { output: null, usage: null };
      this.messages.delete(e.turnId);
      this.ending.delete(e.turnId);
      if (messageId === undefined) return;
      this.done.push({ messageId, turnId: e.turnId, outcome: e.outcome, ...end });
      if (this.done.length > this.capacity) this.done.splice(0, this.done.length - this.capacity);
    }
  }

  /** What the turn was billed for, from its result (an interrupted or failed turn's usage too). */
  billed(turnId: string, usage: Usage): void {
    const end = this.ending.get(turnId);
    this.ending.set(turnId, { output: end?.output ?? null, usage });
  }

  /** An interrupted call of the turn was billed for more once its connection closed. */
  settled(turnId: string, usage: CallUsage): void {
    const add = (u: Usage | null): Usage | null => (u === null ? null : addSettledUsage(u, usage));
    const end = this.ending.get(turnId);
    if (end !== undefined) this.ending.set(turnId, { ...end, usage: add(end.usage) });
    const done = this.done.findLast((t) => t.turnId === turnId);
    if (done !== undefined) done.usage = add(done.usage);
  }

  has(messageId: string): boolean {
    return this.done.some((t) => t.messageId === messageId);
  }

  get(messageId: string): FinishedTurn | undefined {
    return this.done.findLast((t) => t.messageId === messageId);
  }

  list(): FinishedTurn[] {
    return [...this.done];
  }
}
