// read_file: a text file, by line range, with line numbers, within a size budget.
import { type ToolContext } from './context';
import { type FileHandle } from 'node:fs/promises';
import { progressReporter } from './progress';
import { type ToolFacts, type ToolResult, toolOk } from './result';
import { looksBinary, formatBytes } from './text';
import { openExisting, ToolError } from './workspace';
import { type ReadFileInput } from '../../machines/builtin-tools';
// The input schema and the description are the tool's spec, pure, so the policy and workflows read them too.
export { readFileInput, type ReadFileInput, READ_FILE_DESCRIPTION } from '../../machines/builtin-tools';

/** Larger files are refused: grep them or read a range with run_command instead. */
export const MAX_READ_FILE_BYTES = 64 * 1024 * 1024;
const DEFAULT_LIMIT = 2000;
const MAX_LINE_CHARS = 2000;
const OUTPUT_BUDGET_BYTES = 24_000;

export async function readFile(ctx: ToolContext, input: ReadFileInput): Promise<ToolResult> {
  const opened = await openExisting(ctx.ws, input.path, 'read');
  let bytes: Buffer;
  try {
    if (opened.stats.size > MAX_READ_FILE_BYTES) {
      throw new ToolError(
        `${input.path} is ${formatBytes(opened.stats.size)}, more than read_file reads (${formatBytes(MAX_READ_FILE_BYTES)}); use grep or run_command (e.g. sed -n) for parts of it`,
      );
    }
    bytes = await readWithProgress(ctx, opened.handle, opened.stats.size);
  } finally {
    await opened.handle.close();
  }
  const read: ToolFacts = { kind: 'read', bytes: bytes.length, files: 1 };
  if (looksBinary(bytes)) {
    return toolOk(`${opened.rel} is a binary file (${formatBytes(bytes.length)}); its content is not shown.`, read);
  }
  if (bytes.length === 0) return toolOk(`${opened.rel} is empty.`, read);
  const text = bytes.toString('utf8');
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  const first = input.offset ?? 1;
  if (first > lines.length) {
    throw new ToolError(`offset ${first} is past the end of ${opened.rel}, which has ${lines.length} lines`);
  }
  const last = Math.min(lines.length, first - 1 + (input.limit ?? DEFAULT_LIMIT));
  const width = String(last).length;
  const out: string[] = [];
  let used = 0;
  let shownLast = first - 1;
  for (let n = first; n <= last; n += 1) {
    let line = lines[n - 1] ?? '';
    if (line.length > MAX_LINE_CHARS) line = `${line.slice(0, MAX_LINE_CHARS)}… [line cut: ${line.length} chars]`;
    const rendered = `${String(n).padStart(width)}\t${line}`;
    used += Buffer.byteLength(rendered) + 1;
    if (used > OUTPUT_BUDGET_BYTES && n > first) break;
    out.push(rendered);
    shownLast = n;
  }
  if (shownLast < lines.length) {
    out.push(`[lines ${first}–${shownLast} of ${lines.length} shown; read on with offset: ${shownLast + 1}]`);
  }
  return toolOk(out.join('\n'), read);
}

const CHUNK_BYTES = 1024 * 1024;

/** The whole file in chunks, reporting the bytes read so far: a 64 MB read on a slow disk shows progress and hears a cancel. */
async function readWithProgress(ctx: ToolContext, handle: FileHandle, size: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let read = 0;
  const progress = progressReporter(ctx, 'read_file', () => ({ bytes: read, files: 1 }));
  for (;;) {
    const chunk = Buffer.allocUnsafe(Math.max(1, Math.min(CHUNK_BYTES, size - read + 1)));
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
    if (bytesRead === 0) break;
    parts.push(chunk.subarray(0, bytesRead));
    read += bytesRead;
    // Past the size the file had when opened (it grew): still bounded by the refusal above, on the next read.
    if (read > MAX_READ_FILE_BYTES) throw new ToolError(`the file grew past ${formatBytes(MAX_READ_FILE_BYTES)} while it was read`);
    progress();
    if (ctx.signal.aborted) break;
  }
  return Buffer.concat(parts, read);
}
