// A long conversation's request, sent from bytes the worker already has. Every model call
// sends the whole conversation; the Anthropic SDK serialised the request whole
// (`JSON.stringify`) and fetch encoded that text to UTF-8 again, ~2 MB of work and garbage a
// call at turn 100 of a tool-heavy session, growing with the session (docs/performance.md,
// "Issue 53 (thirteenth part)"). A warm conversation past a size keeps its messages' JSON in
// one buffer, each message's bytes appended once when it joins (activities/warm-conversations.ts);
// a request is then a few views of that buffer — the runs of messages sent as they were kept —
// and the text of what changed since: the new messages, the copies that carry this call's
// cache breakpoints, the fields around them. Streamed to fetch with its length: a handful of
// writes, nothing serialised, encoded or copied again.
//
// Byte for byte `JSON.stringify(body)` (test/unit/request-bytes.test.ts): the API sees the
// request it always saw.

/** Where the bytes of a session's messages live: appended to, never rewritten below `used`. */
interface Arena {
  buffer: Buffer;
  /** Bytes written. Only the bytes of the newest `MessageBytes` end here; an older one that grows copies. */
  used: number;
}

/**
 * The JSON bytes of a conversation's messages, each followed by a comma, in one buffer. Fixed
 * once made: `append` gives a new one, sharing the buffer when it can.
 */
export class MessageBytes {
  private constructor(
    private readonly arena: Arena,
    /** Where each message starts; the last entry is where the last one ends. */
    private readonly offsets: readonly number[],
  ) {}

  static of(messages: readonly unknown[]): MessageBytes {
    return new MessageBytes({ buffer: Buffer.alloc(0), used: 0 }, [0]).append(messages);
  }

  /** How many messages' bytes are kept. */
  get count(): number {
    return this.offsets.length - 1;
  }

  /** The bytes of the messages (with their commas). */
  get length(): number {
    return this.offsets.at(-1)!;
  }

  /** The memory held: the buffer's whole size (it grows by half again at a time). */
  get bytes(): number {
    return this.arena.buffer.length;
  }

  /** These messages and `more` after them. */
  append(more: readonly unknown[]): MessageBytes {
    const texts = more.map((message) => `${JSON.stringify(message)},`);
    const needed = texts.reduce((n, text) => n + Buffer.byteLength(text, 'utf8'), 0);
    const end = this.offsets.at(-1)!;
    let arena = this.arena;
    // Another MessageBytes grew from this one already (its bytes follow ours), or no room: a new buffer.
    if (arena.used !== end || end + needed > arena.buffer.length) {
      const buffer = Buffer.allocUnsafeSlow(Math.max(64 * 1024, Math.ceil((end + needed) * 1.5)));
      this.arena.buffer.copy(buffer, 0, 0, end);
      arena = { buffer, used: end };
    }
    const offsets = [...this.offsets];
    for (const text of texts) {
      arena.used += arena.buffer.write(text, arena.used, 'utf8');
      offsets.push(arena.used);
    }
    return new MessageBytes(arena, offsets);
  }

  /** The bytes of messages `from` up to `to` (exclusive), each followed by its comma: a view, not a copy. */
  range(from: number, to: number): Buffer {
    return this.arena.buffer.subarray(this.offsets[from], this.offsets[to]);
  }
}

/**
 * `body` as JSON, in parts: its fields in their order, and `body.messages` from `kept` where
 * a message is the very object `sentFrom` holds at that place (one view per run of them); a
 * message that carries a cache breakpoint this call is a copy, and is serialised here.
 */
export function requestParts(body: Readonly<Record<string, unknown>>, sentFrom: readonly unknown[], kept: MessageBytes): Buffer[] {
  const parts: Buffer[] = [];
  let text = '{';
  const flush = () => {
    if (text !== '') parts.push(Buffer.from(text, 'utf8'));
    text = '';
  };
  let first = true;
  for (const [key, value] of Object.entries(body)) {
    if (key === 'messages' && Array.isArray(value)) {
      text += `${first ? '' : ','}${JSON.stringify(key)}:[`;
      first = false;
      const messages = value as unknown[];
      const isKept = (i: number) => i < kept.count && messages[i] === sentFrom[i];
      // Kept bytes end in a comma; text that follows them needs none before it.
      let comma = false;
      for (let i = 0; i < messages.length; ) {
        if (!isKept(i)) {
          text += `${comma ? ',' : ''}${JSON.stringify(messages[i])}`;
          comma = true;
          i++;
          continue;
        }
        let j = i + 1;
        while (j < messages.length && isKept(j)) j++;
        if (comma) text += ',';
        flush();
        const run = kept.range(i, j);
        // The array's last element takes no comma after it.
        parts.push(j === messages.length ? run.subarray(0, run.length - 1) : run);
        comma = false;
        i = j;
      }
      text += ']';
      continue;
    }
    // As JSON.stringify does: a field whose value has no JSON (undefined, a function) is left out.
    const json = JSON.stringify(value) as string | undefined;
    if (json === undefined) continue;
    text += `${first ? '' : ','}${JSON.stringify(key)}:${json}`;
    first = false;
  }
  text += '}';
  flush();
  return parts;
}

/** Request options that send `parts` as the body, streamed as they are, with their length. */
export function streamedBody(parts: readonly Buffer[]): { body: ReadableStream<Uint8Array>; headers: Record<string, string> } {
  const length = parts.reduce((n, part) => n + part.length, 0);
  let next = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (next < parts.length) controller.enqueue(parts[next++]!);
      else controller.close();
    },
  });
  return { body, headers: { 'content-type': 'application/json', 'content-length': String(length) } };
}
