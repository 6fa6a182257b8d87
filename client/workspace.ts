// Where a session or goal works, resolved once, by the real path, before it starts: the
// path must exist (or be created, when the caller says so explicitly), symlinks are
// resolved, and with a root (the server's --workspace) the real path must stay inside the
// root's real path. The workflow gets that real path and the tools refuse to work if it
// later resolves anywhere else (activities/tools/workspace.ts openWorkspace): pinned.
import { constants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';

/** A workspace that cannot be used; `field` names the option or body field. */
export class WorkspaceError extends Error {
  override name = 'WorkspaceError';
  constructor(
    message: string,
    readonly field = 'workspace',
  ) {
    super(message);
  }
}

export interface ResolveOptions {
  /** Paths are relative to it, and must stay inside its real path after resolution. */
  root?: string;
  /** Create the directory (and missing parents) when it does not exist. */
  create?: boolean;
}

export async function resolveWorkspace(requested: string | undefined, options: ResolveOptions = {}): Promise<string> {
  const base = path.resolve(options.root ?? process.cwd());
  const full = path.resolve(base, requested ?? '.');
  // Under a server's root the caller is a client of that server: its refusals name paths as the
  // caller wrote them, relative to the root, never the server's own absolute paths.
  const shown = options.root === undefined ? (requested ?? full) : path.relative(base, full) || '.';
  let realRoot: string | undefined;
  if (options.root !== undefined) {
    realRoot = await fs.realpath(base).catch(() => {
      throw new WorkspaceError("the server's workspace root does not exist (see the server's log or `keel serve --workspace`)");
    });
    if (full !== base && !full.startsWith(base + path.sep)) throw new WorkspaceError("workspace must lie inside the server's workspace root (a path relative to it)");
  }
  if (options.create) await createInside(full, realRoot, shown);
  let real: string;
  try {
    real = await fs.realpath(full);
  } catch {
    throw new WorkspaceError(`workspace ${shown} does not exist${options.create ? '' : ' (pass createWorkspace: true to create it)'}`);
  }
  const stats = await fs.stat(real);
  if (!stats.isDirectory()) throw new WorkspaceError(`workspace ${shown} is not a directory`);
  if (realRoot !== undefined && real !== realRoot && !real.startsWith(realRoot + path.sep)) {
    throw new WorkspaceError(`workspace ${shown} resolves outside the server's workspace root (through a symlink)`);
  }
  await fs.access(real, constants.R_OK | constants.X_OK).catch(() => {
    throw new WorkspaceError(`workspace ${shown} is not readable`);
  });
  return real;
}

/** Creates missing directories one by one, never through a symlink that leads out of the root. */
async function createInside(full: string, realRoot: string | undefined, shown: string): Promise<void> {
  const missing: string[] = [];
  let existing = full;
  for (;;) {
    try {
      await fs.lstat(existing);
      break;
    } catch {
      missing.unshift(path.basename(existing));
      const parent = path.dirname(existing);
      if (parent === existing) break;
      existing = parent;
    }
  }
  let real = await fs.realpath(existing).catch(() => existing);
  for (const name of missing) {
    if (realRoot !== undefined && real !== realRoot && !real.startsWith(realRoot + path.sep)) {
      throw new WorkspaceError(`workspace ${shown} would be created outside the server's workspace root (through a symlink)`);
    }
    real = path.join(real, name);
    await fs.mkdir(real).catch((error: unknown) => {
      if ((error as { code?: string }).code !== 'EEXIST') throw new WorkspaceError(realRoot === undefined ? `cannot create workspace: ${(error as Error).message}` : `cannot create workspace ${shown}: ${(error as { code?: string }).code ?? 'error'}`);
    });
    real = await fs.realpath(real);
  }
}

/**
 * A fork's new directory, absolute, with its parent's real path (the directory itself does
 * not exist yet): resolved once here, as a session's workspace is, since the worker lays the
 * fork out without following a link at any part of its path (activities/workspace-tree.ts).
 * A parent that does not exist yet is left as given (the worker makes it).
 */
export async function forkWorkspacePath(requested: string): Promise<string> {
  const full = path.resolve(requested);
  const parent = await fs.realpath(path.dirname(full)).catch(() => path.dirname(full));
  return path.join(parent, path.basename(full));
}
