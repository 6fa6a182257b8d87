// grep: lines matching a regular expression in the workspace's text files.
import picomatch from 'picomatch';
import { type ToolContext } from './context';
import { progressReporter } from './progress';
import { type ToolFacts, type ToolResult, toolOk } from './result';
import { looksBinary } from './text';
import { type FileHandle } from 'node:fs/promises';
import { assertGlobInside, openWalked, SKIPPED_DIRS, walk } from './walk';
import { hardLinkRefusal, openExisting, relativePath, ToolError } from './workspace';
import { type GrepInput } from '../../machines/builtin-tools';
// The input schema and the description are the tool's spec, pure, so the policy and workflows read them too.
export { grepInput, type GrepInput, GREP_DESCRIPTION } from '../../machines/builtin-tools';

const MAX_LINE_CHARS = 300;
/** A line longer than this is matched on its first part only; the answer says so. */
const MAX_MATCHED_LINE_BYTES = 1024 * 1024;
const CHUNK_BYTES = 1024 * 1024;
const MAX_WALK = 200_000;

interface Tally {
  files: number;
  /** Bytes read so far, for progress and the result's facts. */
  bytes: number;
  binary: number;
  hardLinked: number;
  longLines: number;
}

export async function grep(ctx: ToolContext, input: GrepInput): Promise<ToolResult> {
  let regex: RegExp;
  try {
    regex = new RegExp(input.pattern, input.ignore_case ? 'i' : '');
  } catch (error) {
    throw new ToolError(`invalid regular expression ${JSON.stringify(input.pattern)}: ${(error as Error).message}`);
  }
  if (input.glob !== undefined) assertGlobInside(input.glob);
  const limit = input.max_results ?? 200;
  const start = relativePath(input.path ?? '.');
  const filter = input.glob ? picomatch(input.glob, { dot: true }) : undefined;
  const out: string[] = [];
  let matches = 0;
  const tally: Tally = { files: 0, bytes: 0, binary: 0, hardLinked: 0, longLines: 0 };
  const progress = progressReporter(ctx, 'grep', () => tally);
  const enough = () => matches > limit * 10 || ctx.signal.aborted;

  // Streams the file in chunks: memory stays bounded whatever its size, and the scan
  // stops as soon as enough lines matched.
  const scan = async (rel: string, handle: FileHandle) => {
    let carry = Buffer.alloc(0);
    let lineNo = 0;
    let first = true;
    let skippingLongLine = false;
    const onLine = (bytes: Buffer) => {
      lineNo += 1;
      const line = bytes.toString('utf8');
      if (!regex.test(line)) return;
      matches += 1;
      if (out.length < limit) out.push(`${rel}:${lineNo}: ${line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}…` : line}`);
    };
    const buffer = Buffer.alloc(CHUNK_BYTES);
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, CHUNK_BYTES, null);
      if (bytesRead === 0) break;
      tally.bytes += bytesRead;
      let chunk = buffer.subarray(0, bytesRead);
      if (first) {
        first = false;
        if (looksBinary(chunk)) {
          tally.binary += 1;
          return;
        }
        tally.files += 1;
      }
      progress();
      for (;;) {
        const nl = chunk.indexOf(0x0a);
        if (nl < 0) break;
        if (skippingLongLine) {
          skippingLongLine = false;
          lineNo += 1;
        } else {
          onLine(carry.length ? Buffer.concat([carry, chunk.subarray(0, nl)]) : chunk.subarray(0, nl));
        }
        carry = Buffer.alloc(0);
        chunk = chunk.subarray(nl + 1);
        if (enough()) return;
      }
      if (!skippingLongLine) {
        carry = Buffer.concat([carry, chunk]);
        if (carry.length > MAX_MATCHED_LINE_BYTES) {
          // Match the first part of a giant line, then skip to its end.
          tally.longLines += 1;
          onLine(carry.subarray(0, MAX_MATCHED_LINE_BYTES));
          lineNo -= 1; // counted again when its end is reached
          carry = Buffer.alloc(0);
          skippingLongLine = true;
        }
      }
    }
    if (first) tally.files += 1; // empty file
    if (carry.length && !skippingLongLine) onLine(carry);
  };

  const single = await openExisting(ctx.ws, start, 'read', { allowHardLinks: true }).catch((error: unknown) => {
    if (error instanceof ToolError && /is a directory/.test(error.message)) return undefined;
    throw error;
  });
  if (single) {
    try {
      if (single.stats.nlink > 1) throw hardLinkRefusal(start, single.stats.nlink);
      await scan(single.rel, single.handle);
    } finally {
      await single.handle.close();
    }
  } else {
    const startsInSkipped = [...SKIPPED_DIRS].some((dir) => start === dir || start.startsWith(`${dir}/`));
    // Starting inside a skipped directory (e.g. .keel/artifacts) searches it; below the
    // start, skipped directories stay skipped.
    const descend = (_rel: string, name: string) => startsInSkipped || !SKIPPED_DIRS.has(name);
    for await (const entry of walk(ctx.ws, start, { maxEntries: MAX_WALK, signal: ctx.signal, descend })) {
      if (entry.kind !== 'file') continue;
      if (filter && !filter(entry.rel)) continue;
      const handle = await openWalked(entry);
      if (!handle) continue;
      try {
        const stats = await handle.stat();
        if (!stats.isFile()) continue;
        if (stats.nlink > 1) {
          tally.hardLinked += 1;
          continue;
        }
        await scan(start === '.' ? entry.rel : `${start}/${entry.rel}`, handle);
      } finally {
        await handle.close();
      }
      if (enough()) break;
    }
  }
  const notes = skippedNote(tally);
  const read: ToolFacts = { kind: 'read', bytes: tally.bytes, files: tally.files };
  if (matches === 0) return toolOk(`No matches for /${input.pattern}/ in ${tally.files} file${tally.files === 1 ? '' : 's'}.${notes}`, read);
  const more = matches > out.length ? `\n[more than ${out.length} matching lines; showing the first ${out.length}. Narrow the pattern, path or glob]` : '';
  return toolOk(out.join('\n') + more + notes, read);
}

function skippedNote(tally: Tally): string {
  const parts: string[] = [];
  if (tally.hardLinked) parts.push(`${tally.hardLinked} file${tally.hardLinked === 1 ? '' : 's'} with several hard links (their other names may be outside the workspace)`);
  const notes = parts.length ? `\n[skipped: ${parts.join(', ')}]` : '';
  return tally.longLines ? `${notes}\n[${tally.longLines} line${tally.longLines === 1 ? '' : 's'} longer than 1 MiB: only the first MiB of each was matched]` : notes;
}
