// write_file: create or replace a whole file, atomically. Writing the same content
// twice gives the same file, and the ledger makes a retry answer as the first did.
import { type ToolContext } from './context';
import { readRecord, sha256, writeRecord } from './ledger';
import { type ToolFacts, type ToolResult, toolOk } from './result';
import { writeFileInside } from './workspace';
import { type WriteFileInput } from '../../machines/builtin-tools';
// The input schema and the description are the tool's spec, pure, so the policy and workflows read them too.
export { writeFileInput, type WriteFileInput, WRITE_FILE_DESCRIPTION } from '../../machines/builtin-tools';

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
