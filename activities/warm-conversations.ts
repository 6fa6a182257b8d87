// A session's conversation kept warm on the worker between its model calls: the messages up
// to the head the last call ended at, already read and with their stored tool results put
// back (activities/stored-outputs.ts). The next call of the session names that head as its
// parent, so only its `append` is new: the walk over every segment and the resolution of
// every result are not done again, and a long session's call costs what its new messages cost.
//
// Correct by construction: a head is the SHA-256 of its chain (activities/conversation-store.ts),
// so the messages remembered for a head are that conversation whatever happened since. An entry
// is used only when the call's parent is the remembered head in the same store; anything else —
// another worker took the previous call, the worker restarted, a rewind or a fork (another
// head), a compaction (the compacted head is remembered in its place), another store — reads
// the conversation from the store as before. Bounded by bytes (least recently used first out).
import type Anthropic from '@anthropic-ai/sdk';

interface Entry {
  store: string;
  head: string;
  messages: readonly Anthropic.MessageParam[];
  bytes: number;
}

/** Bytes of JSON the warm conversations of one worker may hold in all. */
export const DEFAULT_WARM_BYTES = 256 * 1024 * 1024;

export class WarmConversations {
  private readonly entries = new Map<string, Entry>();
  private total = 0;
  hits = 0;
  misses = 0;
  /** Off: every call reads its conversation from the store (a test's cold path to compare with). */
  enabled = true;

  constructor(private readonly limitBytes: number = DEFAULT_WARM_BYTES) {}

  /** The messages of `head` in `store` for `session`, when this worker remembers exactly that. */
  get(session: string, store: string, head: string | null): readonly Anthropic.MessageParam[] | undefined {
    const entry = this.entries.get(session);
    if (!this.enabled || head === null || entry === undefined || entry.store !== store || entry.head !== head) {
      this.misses++;
      return undefined;
    }
    // Most recently used last: the bound evicts the coldest session.
    this.entries.delete(session);
    this.entries.set(session, entry);
    this.hits++;
    return entry.messages;
  }

  /**
   * Remembers `messages` as the conversation of `head`. `added` are the messages new since the
   * remembered entry (their size is added to its own); without a remembered base the whole is measured.
   */
  set(session: string, store: string, head: string | null, messages: readonly Anthropic.MessageParam[], added?: readonly Anthropic.MessageParam[], base?: readonly Anthropic.MessageParam[]): void {
    const before = this.entries.get(session);
    if (before !== undefined) {
      this.entries.delete(session);
      this.total -= before.bytes;
    }
    if (head === null) return;
    const bytes = before !== undefined && added !== undefined && before.messages === base ? before.bytes + jsonBytes(added) : jsonBytes(messages);
    if (bytes > this.limitBytes) return;
    this.entries.set(session, { store, head, messages, bytes });
    this.total += bytes;
    for (const [key, entry] of this.entries) {
      if (this.total <= this.limitBytes) break;
      this.entries.delete(key);
      this.total -= entry.bytes;
    }
  }

  /** Forgets every session (a test's restarted worker). */
  clear(): void {
    this.entries.clear();
    this.total = 0;
  }

  get size(): number {
    return this.entries.size;
  }

  get bytes(): number {
    return this.total;
  }
}

const jsonBytes = (messages: readonly Anthropic.MessageParam[]): number => messages.reduce((n, m) => n + JSON.stringify(m).length, 0);

/** The worker's warm conversations (one per worker process). */
export const warmConversations = new WarmConversations();
