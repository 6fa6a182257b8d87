// What an edit or a write would change, as a unified diff: shown with every approval of
// such a call, in the console's inbox (server/inbox.ts) and at the terminal (cli/call-view.ts),
// so that a human approves the change they saw, not a summary of it.
import fs from 'node:fs/promises';
import path from 'node:path';
import { createTwoFilesPatch } from 'diff';
import type { Json } from '../machines/index';

/** The unified diff of an edit_file or write_file call (null for other tools). */
export async function diffOf(toolName: string, input: Json, workspace: string | null): Promise<string | null> {
  const patch = await patchOf(toolName, input, workspace);
  // createTwoFilesPatch starts with a line of `=`: not part of a unified diff.
  return patch === null ? null : patch.replace(/^=+\n/, '');
}

async function patchOf(toolName: string, input: Json, workspace: string | null): Promise<string | null> {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return null;
  const file = typeof input.path === 'string' ? input.path : null;
  if (!file) return null;
  if (toolName === 'edit_file' && typeof input.old_string === 'string' && typeof input.new_string === 'string') {
    const newString = input.new_string;
    const before = (await readInside(workspace, file)) ?? input.old_string;
    const after = input.replace_all === true ? before.split(input.old_string).join(newString) : before.replace(input.old_string, () => newString);
    return createTwoFilesPatch(`a/${file}`, `b/${file}`, before, after, undefined, undefined, { context: 3 });
  }
  if (toolName === 'write_file' && typeof input.content === 'string') {
    const before = (await readInside(workspace, file)) ?? '';
    return createTwoFilesPatch(before === '' ? '/dev/null' : `a/${file}`, `b/${file}`, before, input.content, undefined, undefined, { context: 3 });
  }
  return null;
}

/** The file's text when it lies inside the workspace (never a path outside it). */
async function readInside(workspace: string | null, file: string): Promise<string | null> {
  if (!workspace) return null;
  const root = path.resolve(workspace);
  const full = path.resolve(root, file);
  if (full !== root && !full.startsWith(root + path.sep)) return null;
  try {
    const real = await fs.realpath(full);
    const realRoot = await fs.realpath(root);
    if (!real.startsWith(realRoot + path.sep)) return null;
    const stat = await fs.stat(real);
    if (!stat.isFile() || stat.size > 1_000_000) return null;
    return await fs.readFile(real, 'utf8');
  } catch {
    return null;
  }
}
