// list_dir: one directory's entries, directories first marked with "/", symlinks with
// their target, files with their size.
import fs from 'node:fs/promises';
import { type ToolContext } from './context';
import { type ToolResult, toolOk } from './result';
import { formatBytes } from './text';
import { displayName, errorCode, isInside, openExisting, readDirectory, relativeOf, type Workspace } from './workspace';
import { type ListDirInput } from '../../machines/builtin-tools';
// The input schema and the description are the tool's spec, pure, so the policy and workflows read them too.
export { listDirInput, type ListDirInput, LIST_DIR_DESCRIPTION } from '../../machines/builtin-tools';

const MAX_ENTRIES = 1000;

export async function listDir(ctx: ToolContext, input: ListDirInput): Promise<ToolResult> {
  const opened = await openExisting(ctx.ws, input.path ?? '.', 'directory');
  try {
    const entries = await readDirectory(opened);
    entries.sort((a, b) => (a.kind === 'dir' ? 0 : 1) - (b.kind === 'dir' ? 0 : 1) || Buffer.compare(a.name, b.name));
    const base = `/proc/self/fd/${opened.handle.fd}/`;
    const lines: string[] = [];
    for (const entry of entries.slice(0, MAX_ENTRIES)) {
      const name = displayName(entry.name);
      const at = Buffer.concat([Buffer.from(base), entry.name]);
      switch (entry.kind) {
        case 'dir':
          lines.push(`${name}/`);
          break;
        case 'symlink':
          lines.push(`${name} -> ${await describeTarget(ctx.ws, at)}`);
          break;
        case 'file': {
          const stats = await fs.lstat(at).catch(() => undefined);
          lines.push(`${name}  (${stats ? formatBytes(stats.size) : '?'})`);
          break;
        }
        case 'other':
          lines.push(`${name}  (special file)`);
          break;
        default: {
          const never: never = entry.kind;
          throw new Error(`unknown entry kind ${String(never)}`);
        }
      }
    }
    if (entries.length > MAX_ENTRIES) lines.push(`[${entries.length - MAX_ENTRIES} more entries not shown]`);
    const header = `${opened.rel === '.' ? 'workspace root' : `${opened.rel}/`}: ${entries.length} entr${entries.length === 1 ? 'y' : 'ies'}`;
    return toolOk(entries.length ? `${header}\n${lines.join('\n')}` : `${header} (empty)`);
  } finally {
    await opened.handle.close();
  }
}

/**
 * Where a symlink leads, as the model may see it: a workspace path, or only the fact
 * that it leads outside. The text of an outside target is not shown: it would tell the
 * agent about the host's file system, which no tool lets it look at.
 */
async function describeTarget(ws: Workspace, at: Buffer): Promise<string> {
  try {
    const real = await fs.realpath(at, { encoding: 'buffer' });
    return isInside(ws, real) ? relativeOf(ws, real) : '(outside the workspace)';
  } catch (error) {
    if (errorCode(error) === 'ENOENT') {
      const text = await fs.readlink(at, { encoding: 'buffer' }).catch(() => undefined);
      // A dangling link: show its text only when it is relative and stays inside lexically.
      if (text && text[0] !== 0x2f && !displayName(text).split('/').includes('..')) return `${displayName(text)} (missing)`;
      // Outside, missing or not: the same words, so that a listing does not probe the host.
      return '(outside the workspace)';
    }
    return '?';
  }
}
