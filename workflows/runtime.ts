// Small pieces every Keel runner shares: a serial event queue (so machine transitions
// never interleave), durable timers keyed by the machines' timer ids, and the
// conversation log that feeds the conversation store by reference.
import { CancellationScope, isCancellation, sleep } from '@temporalio/workflow';
import { carriedTurns, rebuildConversation, type RebuiltConversation, type TurnStart } from '../machines/conversation-repair';
import type { Message } from '../machines/index';

/** Applies work items one at a time, in arrival order; work posted while draining waits its turn. */
export class SerialQueue {
  private readonly items: (() => void)[] = [];
  private draining = false;

  constructor(private readonly afterDrain: () => void = () => {}) {}

  post(work: () => void): void {
    this.items.push(work);
    if (this.draining) return;
    this.draining = true;
    try {
      for (let next = this.items.shift(); next !== undefined; next = this.items.shift()) next();
    } finally {
      this.draining = false;
    }
    this.afterDrain();
  }
}

interface RunningTimer {
  scope: CancellationScope;
  /** Workflow time (ms since the epoch) when it fires: re-armed from here after continue-as-new. */
  firesAt: number;
}

/** Durable timers by id, as the machines' start_timer / cancel_timer directives name them. */
export class Timers {
  private readonly running = new Map<string, RunningTimer>();

  start(timerId: string, durationMs: number, onFire: () => void, now: number): void {
    this.cancel(timerId);
    const scope = new CancellationScope();
    this.running.set(timerId, { scope, firesAt: now + durationMs });
    scope
      .run(() => sleep(Math.max(1, durationMs)))
      .then(
        () => {
          if (this.running.get(timerId)?.scope !== scope) return;
          this.running.delete(timerId);
          onFire();
        },
        (error: unknown) => {
          if (!isCancellation(error)) throw error;
        },
      );
  }

  cancel(timerId: string): void {
    const timer = this.running.get(timerId);
    if (!timer) return;
    this.running.delete(timerId);
    timer.scope.cancel();
  }

  /** When each running timer fires, for continue-as-new. */
  deadlines(): Record<string, number> {
    return Object.fromEntries([...this.running].map(([id, t]) => [id, t.firesAt]));
  }
}

export interface ConversationSnapshot {
  head: string | null;
  /** Appended but not yet in the store (the next model call stores them). */
  pending: Message[];
  total: number;
  /** The newest messages, kept in memory for the transcript query. */
  tail: Message[];
  /** Where each turn began, with the user's message of turns older than the tail (a repair needs them). */
  turns?: TurnStart[] | undefined;
  /** Turn records past the bound, whose user messages are gone. */
  droppedTurns?: number | undefined;
}

/**
 * The conversation as the workflow sees it: the store's head, the messages appended since
 * (they travel with the next model call, which stores them), and the transcript. History
 * holds each message about once: when it is appended or when the model returns it.
 */
export interface ConversationCheckpoint {
  readonly head: string | null;
  readonly pending: readonly Message[];
}

export class ConversationLog {
  head: string | null;
  private pending: Message[];
  private readonly messages: Message[];
  private firstIndex: number;
  private turns: TurnStart[];
  private droppedTurns: number;

  constructor(snapshot?: ConversationSnapshot) {
    this.head = snapshot?.head ?? null;
    this.pending = [...(snapshot?.pending ?? [])];
    this.messages = [...(snapshot?.tail ?? [])];
    this.firstIndex = (snapshot?.total ?? 0) - this.messages.length;
    this.turns = [...(snapshot?.turns ?? [])];
    this.droppedTurns = snapshot?.droppedTurns ?? 0;
  }

  /** A turn begins: its user message is the next one appended. */
  turnStarted(turnId: string): void {
    this.turns.push({ turnId, at: this.total });
  }

  /**
   * The store lost part of the conversation: from now on it is the one rebuilt from what
   * this log holds, sent whole with the next model call (which stores it as a new chain).
   * Throws when nothing valid can be rebuilt.
   */
  repair(): RebuiltConversation {
    const rebuilt = rebuildConversation({ held: this.messages, first: this.firstIndex, turns: this.turns, droppedTurns: this.droppedTurns });
    this.head = null;
    this.pending = rebuilt.messages;
    return rebuilt;
  }

  get total(): number {
    return this.firstIndex + this.messages.length;
  }

  get first(): number {
    return this.firstIndex;
  }

  append(messages: readonly Message[]): void {
    this.pending.push(...messages);
    this.messages.push(...messages);
  }

  /** What the next model call sends: the head and what follows it. */
  outgoing(): { head: string | null; append: Message[] } {
    return { head: this.head, append: [...this.pending] };
  }

  /** Where the conversation sent to the model stands now (see `rollback`). */
  checkpoint(): ConversationCheckpoint {
    return { head: this.head, pending: [...this.pending] };
  }

  /**
   * The model is sent the conversation as it was at `checkpoint` again (a refused turn);
   * the transcript (`page`) keeps every message.
   */
  rollback(checkpoint: ConversationCheckpoint): void {
    this.head = checkpoint.head;
    this.pending = [...checkpoint.pending];
  }

  /** The store now holds the first `sent` pending messages under `head`. */
  stored(head: string | null, sent: number): void {
    this.head = head;
    this.pending = this.pending.slice(sent);
  }

  /**
   * The conversation is the store's chain at `head` of `total` messages (a rewind, a fork's
   * start; workflows/session-checkpoints.ts). Messages this log still holds up to there stay
   * for the transcript; otherwise `tail` (its newest messages, read from the store) does.
   */
  rewindTo(head: string | null, total: number, tail: readonly Message[] = []): void {
    this.head = head;
    this.pending = [];
    if (total >= this.firstIndex && total <= this.total) this.messages.length = total - this.firstIndex;
    else {
      this.messages.length = 0;
      this.messages.push(...tail.slice(tail.length - Math.min(total, tail.length)));
      this.firstIndex = total - this.messages.length;
    }
    this.turns = this.turns.filter((t) => t.at < total);
  }

  page(from: number, limit: number): Message[] {
    const start = Math.max(from, this.firstIndex) - this.firstIndex;
    return this.messages.slice(start, start + limit);
  }

  snapshot(tailMessages: number, tailBytes: number): ConversationSnapshot {
    const tail: Message[] = [];
    let bytes = 0;
    for (let i = this.messages.length - 1; i >= 0 && tail.length < tailMessages; i--) {
      const message = this.messages[i]!;
      bytes += JSON.stringify(message).length;
      if (bytes > tailBytes && tail.length > 0) break;
      tail.unshift(message);
    }
    const tailFirst = this.total - tail.length;
    const textAt = (index: number): string | undefined => {
      const message = this.messages[index - this.firstIndex];
      return message === undefined || index < this.firstIndex ? undefined : message.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
    };
    const carried = carriedTurns(this.turns, tailFirst, textAt, this.droppedTurns);
    return {
      head: this.head,
      pending: [...this.pending],
      total: this.total,
      tail,
      ...(carried.turns.length > 0 ? { turns: carried.turns } : {}),
      ...(carried.dropped > 0 ? { droppedTurns: carried.dropped } : {}),
    };
  }
}
