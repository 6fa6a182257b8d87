// read_file: a text file, by line range, with line numbers, within a size budget.
import { type ToolContext } from './context';
import { type FileHandle } from 'node:fs/promises';
import { progressReporter } from './progress';
import { type ToolFacts, type ToolResult, toolOk } from './result';
import { looksBinary, formatBytes } from './text';
import { openExisting, ToolError } from './workspace';
import { checkLocalBudget } from './local-budget';
import { type ReadFileInput } from '../../machines/builtin-tools';
// The input schema and the description are the tool's spec, pure, so the policy and workflows read them too.
export { readFileInput, type ReadFileInput, READ_FILE_DESCRIPTION } from '../../machines/builtin-tools';

/** Larger files are refused: grep them or read a range with run_command instead. */
export const MAX_READ_FILE_BYTES = 64 * 1024 * 1024;
const DEFAULT_LIMIT = 2000;
const MAX_LINE_CHARS = 2000;
const OUTPUT_BUDGET_BYTES = 24_000;

/** A file this small is read to its end, so the answer can say how many lines it has. */
const COUNT_LINES_UP_TO_BYTES = 4 * 1024 * 1024;
const CHUNK_BYTES = 256 * 1024;

/**
 * The requested lines, streamed: the file is read from its start only as far as the range (and
 * the output budget) needs, never whole unless it is small. A local call stops at its budget
 * (local-budget.ts) and runs again as an activity.
 */
export async function readFile(ctx: ToolContext, input: ReadFileInput): Promise<ToolResult> {
  const opened = await openExisting(ctx.ws, input.path, 'read');
  let scan: Scan;
  try {
    if (opened.stats.size > MAX_READ_FILE_BYTES) {
      throw new ToolError(
        `${input.path} is ${formatBytes(opened.stats.size)}, more than read_file reads (${formatBytes(MAX_READ_FILE_BYTES)}); use grep or run_command (e.g. sed -n) for parts of it`,
      );
    }
    const first = input.offset ?? 1;
    scan = await scanLines(ctx, opened.handle, first, first - 1 + (input.limit ?? DEFAULT_LIMIT), opened.stats.size <= COUNT_LINES_UP_TO_BYTES);
  } finally {
    await opened.handle.close();
  }
  const read: ToolFacts = { kind: 'read', bytes: scan.scanned, files: 1 };
  if (scan.binary) return toolOk(`${opened.rel} is a binary file (${formatBytes(opened.stats.size)}); its content is not shown.`, read);
  if (scan.scanned === 0) return toolOk(`${opened.rel} is empty.`, read);
  const first = input.offset ?? 1;
  if (scan.lines.length === 0) {
    // Only a scan that reached the end can find the offset past it.
    throw new ToolError(`offset ${first} is past the end of ${opened.rel}, which has ${scan.total ?? 0} lines`);
  }
  const out = scan.lines;
  const shownLast = first + out.length - 1;
  // Numbers padded to the range's last line (the file's, when it ends first), as before streaming.
  const width = String(Math.min(first - 1 + (input.limit ?? DEFAULT_LIMIT), scan.total ?? Infinity)).length;
  const rendered = out.map((line, i) => `${String(first + i).padStart(width)}\t${line}`);
  if (scan.total !== undefined && shownLast < scan.total) {
    rendered.push(`[lines ${first}–${shownLast} of ${scan.total} shown; read on with offset: ${shownLast + 1}]`);
  } else if (scan.total === undefined) {
    rendered.push(`[lines ${first}–${shownLast} shown; the file (${formatBytes(opened.stats.size)}) goes on; read on with offset: ${shownLast + 1}]`);
  }
  return toolOk(rendered.join('\n'), read);
}

interface Scan {
  /** The lines shown, cut to MAX_LINE_CHARS, within the output budget. */
  lines: string[];
  /** The file's line count, when the scan reached its end. */
  total: number | undefined;
  scanned: number;
  binary: boolean;
}

/** One line's head (what may be shown of it) and its length in UTF-16 units, as the string it decodes to would have. */
class LineBuilder {
  private parts: Buffer[] = [];
  private kept = 0;
  private extraUnits = 0;
  add(bytes: Buffer): void {
    // A line is shown up to MAX_LINE_CHARS; at most 4 bytes a character are enough to keep.
    const room = MAX_LINE_CHARS * 4 + 4 - this.kept;
    if (room > 0) {
      const head = bytes.subarray(0, room);
      this.parts.push(Buffer.from(head));
      this.kept += head.length;
    }
    // The rest is only counted: a leading byte is one character, a 4-byte one two UTF-16 units.
    for (let i = Math.max(0, room); i < bytes.length; i += 1) {
      const b = bytes[i] ?? 0;
      if ((b & 0xc0) !== 0x80) this.extraUnits += b >= 0xf0 ? 2 : 1;
    }
  }
  take(): string {
    const text = Buffer.concat(this.parts, this.kept).toString('utf8');
    const length = text.length + this.extraUnits;
    this.parts = [];
    this.kept = 0;
    this.extraUnits = 0;
    return length > MAX_LINE_CHARS ? `${text.slice(0, MAX_LINE_CHARS)}… [line cut: ${length} chars]` : text;
  }
}

/**
 * Lines `first`..`last` (1-based), reading chunk by chunk and stopping once they are read (or the
 * output budget is full), unless `toEnd` asks for the line count too. Lines are split on the
 * newline byte, which no multi-byte UTF-8 character contains, so a character cut by a chunk's
 * end stays whole.
 */
async function scanLines(ctx: ToolContext, handle: FileHandle, first: number, last: number, toEnd: boolean): Promise<Scan> {
  const lines: string[] = [];
  let scanned = 0;
  let line = 1;
  let used = 0;
  let full = false;
  let pendingBytes = 0;
  const builder = new LineBuilder();
  const progress = progressReporter(ctx, 'read_file', () => ({ bytes: scanned, files: 1 }));
  const wanted = () => !full && line >= first && line <= last;
  /** Ends the current line: kept when wanted and within the output budget. */
  const endLine = () => {
    if (wanted()) {
      const text = builder.take();
      const size = Buffer.byteLength(text) + String(last).length + 2;
      if (used + size > OUTPUT_BUDGET_BYTES && lines.length > 0) full = true;
      else {
        lines.push(text);
        used += size;
      }
    }
    line += 1;
  };
  for (;;) {
    const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
    if (bytesRead === 0) break;
    const bytes = chunk.subarray(0, bytesRead);
    if (scanned === 0 && looksBinary(bytes)) return { lines: [], total: undefined, scanned: bytesRead, binary: true };
    scanned += bytesRead;
    // Past the size the file had when opened (it grew): still bounded.
    if (scanned > MAX_READ_FILE_BYTES) throw new ToolError(`the file grew past ${formatBytes(MAX_READ_FILE_BYTES)} while it was read`);
    for (let at = 0; at < bytes.length; ) {
      const nl = bytes.indexOf(0x0a, at);
      const end = nl === -1 ? bytes.length : nl;
      if (wanted()) builder.add(bytes.subarray(at, end));
      pendingBytes = nl === -1 ? pendingBytes + (end - at) : 0;
      if (nl === -1) break;
      endLine();
      at = nl + 1;
    }
    if ((line > last || full) && !toEnd) {
      // Whether anything follows what was shown is all that is left to know; it is known unless
      // the scan stopped exactly at the end of a chunk, at the end of the file.
      if (pendingBytes > 0 || scanned < (await handle.stat()).size) return { lines, total: undefined, scanned, binary: false };
      return { lines, total: line - 1, scanned, binary: false };
    }
    checkLocalBudget(ctx, scanned);
    progress();
    if (ctx.signal.aborted) return { lines, total: undefined, scanned, binary: false };
  }
  // A last line without a newline is a line.
  if (pendingBytes > 0) endLine();
  return { lines, total: line - 1, scanned, binary: false };
}
