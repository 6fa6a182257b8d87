// A workspace host that never comes back is replaced (machines/host-move.ts): this runs on
// the new host's worker (its own task queue) and lays the run's workspace out there before
// the run sends it anything. `copy`: the files are copied from where the operator says they
// are readable on this host (or are there already, at the workspace's own path); `lost`: an
// empty workspace is made, on the operator's word that the files are gone. Each run that
// the move concerns calls it (a goal and its agents share a workspace), so it is idempotent
// by the move's id: the first lays it out and leaves a note in the workspace's .keel/, the
// others find the note. A copy goes to a directory beside the workspace and is renamed into
// place, so a run never sees half a copy.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/activity';
import type { HostMoveFiles } from '../machines/host-move';
import { KEEL_DIR } from './tools/workspace';

export interface AdoptWorkspaceRequest {
  workspace: string;
  moveId: string;
  from: string;
  to: string;
  files: HostMoveFiles;
  source?: string;
}

export interface AdoptWorkspaceResult {
  /** Files copied by this call (0 when another run of the move had laid it out, or for `lost`). */
  copied: number;
  /** Whether the files were found in place (`copy` without a source, at the workspace's own path). */
  inPlace: boolean;
}

const NOTE = 'host-move.json';

interface MoveNote {
  moveId: string;
  from: string;
  to: string;
  files: HostMoveFiles;
  at: string;
}

async function noteOf(workspace: string): Promise<MoveNote | null> {
  try {
    return JSON.parse(await fs.readFile(path.join(workspace, KEEL_DIR, NOTE), 'utf8')) as MoveNote;
  } catch {
    return null;
  }
}

async function writeNote(workspace: string, request: AdoptWorkspaceRequest): Promise<void> {
  const note: MoveNote = { moveId: request.moveId, from: request.from, to: request.to, files: request.files, at: new Date().toISOString() };
  await fs.mkdir(path.join(workspace, KEEL_DIR), { recursive: true });
  await fs.writeFile(path.join(workspace, KEEL_DIR, NOTE), `${JSON.stringify(note, null, 2)}\n`);
}

async function exists(p: string): Promise<boolean> {
  return fs.lstat(p).then(
    () => true,
    () => false,
  );
}

async function countFiles(dir: string): Promise<number> {
  let n = 0;
  for (const entry of await fs.readdir(dir, { withFileTypes: true, recursive: true })) if (!entry.isDirectory()) n += 1;
  return n;
}

/**
 * As root, a copy keeps each file's owner, which `fs.cp` does not: a workspace that became
 * root's would run its commands as host uid 0 (activities/tools/sandbox.ts sandboxIdentity),
 * and root's files would be theirs to read. Not as another user: it can only own its own.
 */
async function keepOwners(from: string, to: string): Promise<void> {
  if (process.getuid?.() !== 0) return;
  const walk = async (rel: string): Promise<void> => {
    const source = await fs.lstat(path.join(from, rel));
    await fs.lchown(path.join(to, rel), source.uid, source.gid);
    if (source.isDirectory()) for (const name of await fs.readdir(path.join(from, rel))) await walk(path.join(rel, name));
  };
  await walk('');
}

/** As root, an empty workspace made for a lost one belongs to whoever owns the directory it is in (see keepOwners). */
async function ownLikeParent(dir: string): Promise<void> {
  if (process.getuid?.() !== 0) return;
  const parent = await fs.stat(path.dirname(dir));
  await fs.lchown(dir, parent.uid, parent.gid);
}

/** A refusal the operator must act on: the move fails and the run stays where it was. */
const refused = (message: string) => ApplicationFailure.create({ type: 'host_move_refused', message, nonRetryable: true });

export function createWorkspaceAdoptActivities() {
  return {
    async adoptWorkspace(request: AdoptWorkspaceRequest): Promise<AdoptWorkspaceResult> {
      const { workspace } = request;
      if (!path.isAbsolute(workspace)) throw refused(`workspace must be an absolute path, got ${JSON.stringify(workspace)}`);
      if ((await noteOf(workspace))?.moveId === request.moveId) return { copied: 0, inPlace: true };
      switch (request.files) {
        case 'lost': {
          // The operator's word: the files are gone. An empty workspace, and the note that says why it is empty.
          await fs.mkdir(workspace, { recursive: true });
          await ownLikeParent(workspace);
          await writeNote(workspace, request);
          return { copied: 0, inPlace: false };
        }
        case 'copy': {
          if (request.source === undefined) {
            // The old root is readable here at the workspace's own path (the disk moved with its mount point).
            const stat = await fs.stat(workspace).catch(() => null);
            if (stat === null || !stat.isDirectory()) {
              throw refused(`workspace ${workspace} is not on host "${request.to}": nothing to copy it from. Give the path where the old host's files are readable there (--source), or declare them lost (--files lost)`);
            }
            await writeNote(workspace, request);
            return { copied: 0, inPlace: true };
          }
          const from = path.join(request.source, workspace);
          const stat = await fs.stat(from).catch(() => null);
          if (stat === null || !stat.isDirectory()) throw refused(`${from} (the workspace below --source ${request.source}) is not a directory on host "${request.to}": nothing to copy`);
          if (await exists(workspace)) {
            const entries = await fs.readdir(workspace).catch(() => null);
            // Another run of this move (a goal and its agent share the workspace) may have just laid it out.
            if ((await noteOf(workspace))?.moveId === request.moveId) return { copied: 0, inPlace: true };
            if (entries === null || entries.length > 0) throw refused(`workspace ${workspace} already exists on host "${request.to}" with files in it: Keel does not copy over them; move them away first`);
          }
          await fs.mkdir(path.dirname(workspace), { recursive: true });
          const staging = `${workspace}.keel-move-${randomBytes(6).toString('hex')}`;
          try {
            await fs.cp(from, staging, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true, errorOnExist: true, force: false });
            await keepOwners(from, staging);
            const copied = await countFiles(staging);
            await writeNote(staging, request);
            // An empty directory in the way (made by hand) is replaced; a laid-out one (another run of this move) wins.
            await fs.rmdir(workspace).catch(() => undefined);
            try {
              await fs.rename(staging, workspace);
            } catch (error) {
              if ((await noteOf(workspace))?.moveId === request.moveId) return { copied: 0, inPlace: true };
              throw error;
            }
            return { copied, inPlace: false };
          } finally {
            await fs.rm(staging, { recursive: true, force: true });
          }
        }
        default: {
          const never: never = request.files;
          throw refused(`unknown files ${JSON.stringify(never)}`);
        }
      }
    },
  };
}
