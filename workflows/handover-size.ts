// The next run's input carries the session's queue, and a run's input is one payload under
// the server's 2 MB limit (a larger one fails every workflow task): a queue of large
// messages is worked off in the current run instead of being handed over.

/** Queued text a hand-over may carry: the rest of the carry (conversation tail, event log tail, state) stays well under 1 MB. */
export const HANDOVER_QUEUE_BYTES = 512 * 1024;

export function handoverFits(texts: readonly string[]): boolean {
  let bytes = 0;
  for (const text of texts) bytes += utf8Bytes(text);
  return bytes <= HANDOVER_QUEUE_BYTES;
}

function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    // Each half of a surrogate pair (4 bytes in UTF-8) counts 2.
    bytes += c < 0x80 ? 1 : c < 0x800 ? 2 : c >= 0xd800 && c <= 0xdfff ? 2 : 3;
  }
  return bytes;
}
