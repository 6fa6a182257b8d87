// Deciding whether bytes are text the model can read.

const SNIFF_BYTES = 8192;

/** NUL bytes or invalid UTF-8 in the first 8 KiB: binary, as git and grep judge it. */
export function looksBinary(bytes: Buffer): boolean {
  const sample = bytes.subarray(0, SNIFF_BYTES);
  if (sample.includes(0)) return true;
  // A multi-byte character may be cut at the end of the sample; do not count that.
  let end = sample.length;
  if (bytes.length > SNIFF_BYTES) {
    let back = 0;
    while (back < 4 && end - back - 1 >= 0 && ((sample[end - back - 1] ?? 0) & 0xc0) === 0x80) back += 1;
    end -= back + (back > 0 || ((sample[end - 1] ?? 0) & 0xc0) === 0xc0 ? 1 : 0);
  }
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(sample.subarray(0, Math.max(0, end)));
    return false;
  } catch {
    return true;
  }
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
