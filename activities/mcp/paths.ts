// File arguments of MCP tool calls, checked against the real file system before the call:
// each must resolve (through symlinks, as far as it exists) inside the session's workspace
// and outside Keel's own `.keel/`. The policy has judged the same arguments lexically;
// this is the check on what they actually name. The server's own root (the workspace,
// through MCP roots) is the second wall.
import fs from 'node:fs/promises';
import path from 'node:path';
import { mcpWorkspacePath, pathArgumentsOf } from '../../machines/policy';
import { isInside, protectedDirReal, type Workspace } from '../tools/workspace';

export async function refusePathsOutside(ws: Workspace, input: unknown): Promise<string | undefined> {
  for (const raw of pathArgumentsOf(input)) {
    const lexical = mcpWorkspacePath(raw, ws.root);
    if (lexical.type === 'outside') return `path ${JSON.stringify(raw)} is outside the workspace; refused`;
    const real = await resolveExisting(path.join(ws.root, lexical.path));
    if (!isInside(ws, real)) return `path ${JSON.stringify(raw)} resolves outside the workspace (through a symlink); refused`;
    const dir = protectedDirReal(ws, real);
    if (dir) return `path ${JSON.stringify(raw)} is in ${dir}/, which ${dir === '.keel' ? "holds Keel's own state" : 'holds git configuration and hooks'}; refused`;
  }
  return undefined;
}

/** The real path of `target`, or of its deepest existing ancestor with the rest appended. */
async function resolveExisting(target: string): Promise<Buffer> {
  let existing = target;
  const rest: string[] = [];
  for (;;) {
    try {
      const real = await fs.realpath(existing);
      return Buffer.from(rest.length ? path.join(real, ...rest) : real);
    } catch {
      // A dangling symlink would be followed by whoever creates the file: treat as outside.
      if (await fs.lstat(existing).then((stats) => stats.isSymbolicLink(), () => false)) return Buffer.from('/');
      const parent = path.dirname(existing);
      if (parent === existing) return Buffer.from(target);
      rest.unshift(path.basename(existing));
      existing = parent;
    }
  }
}
