// write_file: create or replace a whole file, atomically. Writing the same content
// twice gives the same file, and the ledger makes a retry answer as the first did.
import { z } from 'zod';
import { type ToolContext } from './context';
import { readRecord, sha256, writeRecord } from './ledger';
import { type ToolFacts, type ToolResult, toolOk } from './result';
import { writeFileInside } from './workspace';

export const writeFileInput = z
  .object({
    path: z.string().min(1).describe('File path relative to the workspace root. Missing parent directories are created.'),
    content: z.string().describe('The complete new content of the file.'),
  })
  .strict();
export type WriteFileInput = z.infer<typeof writeFileInput>;

export const WRITE_FILE_DESCRIPTION =
  'Create a file, or replace the whole content of an existing one, in the workspace. Prefer ' +
  'edit_file for changing part of an existing file. Paths are relative to the workspace root; ' +
  'the .keel/ directory is reserved.';

export async function writeFile(ctx: ToolContext, input: WriteFileInput): Promise<ToolResult> {
  const previous = await readRecord(ctx);
  if (previous?.result !== undefined) return toolOk(previous.result, changed(previous.path));
  const written = await writeFileInside(ctx.ws, input.path, input.content);
  const bytes = Buffer.byteLength(input.content);
  const result = `${written.created ? 'Created' : 'Wrote'} ${written.rel} (${bytes} bytes).`;
  await writeRecord(ctx, { tool: 'write_file', path: written.rel, after: sha256(input.content), result });
  return toolOk(result, changed(written.rel));
}

/** The file a write changed, as data for the evidence (machines/evidence.ts). */
export function changed(rel: string): ToolFacts {
  return { kind: 'files_changed', filesChanged: [rel] };
}
