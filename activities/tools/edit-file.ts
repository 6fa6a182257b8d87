// edit_file: exact string replacement. The old text must occur exactly once (or
// replace_all must be set); a retry after a crash never applies the edit twice,
// because the intended before/after hashes are recorded before the file changes.
import { type ToolContext } from './context';
import { readRecord, sha256, writeRecord } from './ledger';
import { type ToolResult, toolOk } from './result';
import { looksBinary } from './text';
import { openExisting, ToolError, writeFileInside } from './workspace';
import { changed } from './write-file';
import { type EditFileInput } from '../../machines/builtin-tools';
// The input schema and the description are the tool's spec, pure, so the policy and workflows read them too.
export { editFileInput, type EditFileInput, EDIT_FILE_DESCRIPTION } from '../../machines/builtin-tools';

export async function editFile(ctx: ToolContext, input: EditFileInput): Promise<ToolResult> {
  if (input.old_string === input.new_string) throw new ToolError('old_string and new_string are the same; nothing to change');
  const previous = await readRecord(ctx);
  if (previous?.result !== undefined) return toolOk(previous.result, changed(previous.path));

  const opened = await openExisting(ctx.ws, input.path, 'read');
  let before: Buffer;
  try {
    before = await opened.handle.readFile();
  } finally {
    await opened.handle.close();
  }
  const beforeHash = sha256(before);
  if (previous && beforeHash === previous.after) {
    // An earlier attempt applied the edit and crashed before answering.
    const result = `Edited ${opened.rel} (applied by an earlier attempt of this call).`;
    await writeRecord(ctx, { ...previous, result });
    return toolOk(result, changed(opened.rel));
  }
  if (looksBinary(before)) throw new ToolError(`${opened.rel} is a binary file; edit_file changes text files only`);
  const text = before.toString('utf8');
  const lines = occurrenceLines(text, input.old_string);
  if (lines.length === 0) {
    throw new ToolError(
      `old_string was not found in ${opened.rel}. It must match the file exactly, including whitespace and indentation, without line-number prefixes; read the file again and retry.`,
    );
  }
  if (lines.length > 1 && !input.replace_all) {
    throw new ToolError(
      `old_string occurs ${lines.length} times in ${opened.rel} (at lines ${lines.slice(0, 10).join(', ')}${lines.length > 10 ? ', …' : ''}); add surrounding lines to make it unique, or set replace_all: true.`,
    );
  }
  const after = text.split(input.old_string).join(input.new_string);
  const rel = opened.rel;
  await writeRecord(ctx, { tool: 'edit_file', path: rel, before: beforeHash, after: sha256(after) });
  await writeFileInside(ctx.ws, rel, after);
  const result = `Edited ${rel}: replaced ${lines.length} occurrence${lines.length === 1 ? '' : 's'} (line${lines.length === 1 ? '' : 's'} ${lines.slice(0, 10).join(', ')}).`;
  await writeRecord(ctx, { tool: 'edit_file', path: rel, before: beforeHash, after: sha256(after), result });
  return toolOk(result, changed(rel));
}

function occurrenceLines(text: string, needle: string): number[] {
  const found: number[] = [];
  let from = 0;
  for (;;) {
    const at = text.indexOf(needle, from);
    if (at < 0) return found;
    found.push(text.slice(0, at).split('\n').length);
    from = at + needle.length;
  }
}
