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
//
// A conversation past `keepBytesAbove` also keeps each message's JSON bytes, made once when
// the message joins it: its calls send those (activities/request-bytes.ts) instead of
// serialising the whole conversation again. They count against the bound like the messages.
import type Anthropic from '@anthropic-ai/sdk';
import { MessageBytes } from './request-bytes';

interface Entry {
  store: string;
  head: string;
  messages: readonly Anthropic.MessageParam[];
  /** The messages' JSON bytes, when the conversation is past `keepBytesAbove`. */
  encoded: MessageBytes | undefined;
  /** The messages' size as JSON. */
  json: number;
  /** What the entry counts against the bound: that, and the kept bytes' buffer. */
  bytes: number;
}

/** Bytes of JSON the warm conversations of one worker may hold in all. */
export const DEFAULT_WARM_BYTES = 256 * 1024 * 1024;

/**
 * Conversations of more JSON than this keep their messages' bytes. Below it serialising the
 * request costs little, and ten thousand parked sessions would each hold a second copy.
 */
export const DEFAULT_KEEP_BYTES_ABOVE = 256 * 1024;

export class WarmConversations {
  private readonly entries = new Map<string, Entry>();
  private total = 0;
  hits = 0;
  misses = 0;
  /** Off: every call reads its conversation from the store (a test's cold path to compare with). */
  enabled = true;

  /** Calls sent from kept bytes (`encoded` answered). */
  keptSends = 0;

  constructor(
    private readonly limitBytes: number = DEFAULT_WARM_BYTES,
    /** Settable: a test sends every call from kept bytes with 0. */
    public keepBytesAbove: number = DEFAULT_KEEP_BYTES_ABOVE,
  ) {}

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
    const continued = before !== undefined && added !== undefined && before.messages === base;
    let json: number;
    let encoded: MessageBytes | undefined;
    if (continued && before.encoded !== undefined) {
      // Kept already: only the new messages' bytes are made, and measure them.
      encoded = before.encoded.append(added);
      json = encoded.length;
    } else {
      json = continued ? before.json + jsonBytes(added) : jsonBytes(messages);
      if (json > this.keepBytesAbove) encoded = MessageBytes.of(messages);
    }
    const kept = encoded?.bytes ?? 0;
    const bytes = json + kept;
    if (bytes > this.limitBytes) return;
    this.entries.set(session, { store, head, messages, encoded, json, bytes });
    this.total += bytes;
    for (const [key, entry] of this.entries) {
      if (this.total <= this.limitBytes) break;
      this.entries.delete(key);
      this.total -= entry.bytes;
    }
  }

  /**
   * The bytes kept for `messages`, when they are the session's warm conversation and it is
   * past the size that keeps them; `messages` must be the very array `get` or `set` holds.
   */
  encoded(session: string, messages: readonly Anthropic.MessageParam[]): MessageBytes | undefined {
    const entry = this.entries.get(session);
    const kept = this.enabled && entry?.messages === messages ? entry.encoded : undefined;
    if (kept !== undefined) this.keptSends++;
    return kept;
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
