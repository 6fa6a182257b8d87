// grep: lines matching a regular expression in the workspace's text files.
import picomatch from 'picomatch';
import { z } from 'zod';
import { type ToolContext } from './context';
import { type ToolResult, toolOk } from './result';
import { looksBinary } from './text';
import { openWalked, SKIPPED_DIRS, walk } from './walk';
import { openExisting, relativePath, ToolError } from './workspace';

export const grepInput = z
  .object({
    pattern: z.string().min(1).describe('JavaScript regular expression, e.g. "function\\\\s+main" or "TODO|FIXME".'),
    path: z.string().optional().describe('File or directory to search, relative to the workspace root. Default ".".'),
    glob: z.string().optional().describe('Only search files whose path (relative to path) matches this glob, e.g. "**/*.ts".'),
    ignore_case: z.boolean().optional().describe('Case-insensitive match. Default false.'),
    max_results: z.number().int().min(1).max(2000).optional().describe('Stop after this many matching lines. Default 200.'),
  })
  .strict();
export type GrepInput = z.infer<typeof grepInput>;

export const GREP_DESCRIPTION =
  'Search the text files of the workspace for a regular expression (JavaScript syntax). Returns ' +
  '"path:line: text" for each matching line. Binary files, files over 64 MiB, .git, .keel and ' +
  'node_modules are skipped (search .keel/artifacts by passing it as path).';

const MAX_FILE_BYTES = 64 * 1024 * 1024;
const MAX_LINE_CHARS = 300;
const MAX_WALK = 200_000;

export async function grep(ctx: ToolContext, input: GrepInput): Promise<ToolResult> {
  let regex: RegExp;
  try {
    regex = new RegExp(input.pattern, input.ignore_case ? 'i' : '');
  } catch (error) {
    throw new ToolError(`invalid regular expression ${JSON.stringify(input.pattern)}: ${(error as Error).message}`);
  }
  const limit = input.max_results ?? 200;
  const start = relativePath(input.path ?? '.');
  const filter = input.glob ? picomatch(input.glob, { dot: true }) : undefined;
  const out: string[] = [];
  let matches = 0;
  let files = 0;

  const scan = (rel: string, bytes: Buffer) => {
    if (bytes.length > MAX_FILE_BYTES || looksBinary(bytes)) return;
    files += 1;
    const lines = bytes.toString('utf8').split('\n');
    for (let i = 0; i < lines.length; i += 1) {
      const line = lines[i] ?? '';
      if (!regex.test(line)) continue;
      matches += 1;
      if (out.length < limit) {
        const shown = line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}…` : line;
        out.push(`${rel}:${i + 1}: ${shown}`);
      }
    }
  };

  const single = await openExisting(ctx.ws, start, 'read').catch((error: unknown) => {
    if (error instanceof ToolError && /is a directory/.test(error.message)) return undefined;
    throw error;
  });
  if (single) {
    try {
      scan(single.rel, single.stats.size > MAX_FILE_BYTES ? Buffer.alloc(MAX_FILE_BYTES + 1) : await single.handle.readFile());
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
        if (!stats.isFile() || stats.size > MAX_FILE_BYTES) continue;
        scan(start === '.' ? entry.rel : `${start}/${entry.rel}`, await handle.readFile());
      } finally {
        await handle.close();
      }
      if (matches > limit * 10) break;
    }
  }
  if (matches === 0) return toolOk(`No matches for /${input.pattern}/ in ${files} file${files === 1 ? '' : 's'}.`);
  const more = matches > out.length ? `\n[more than ${out.length} matching lines; showing the first ${out.length}. Narrow the pattern, path or glob]` : '';
  return toolOk(out.join('\n') + more);
}
