// Moving a host's workspaces: a workspace host that never comes back (a dead disk, a machine
// retired) is replaced by an operator (`keel host move <from> <to> --files copy|lost`), and
// every run whose workspace was on <from> goes on on <to>. The rules here decide, for one
// run, whether a move request applies to it and what the run shows; the workflow
// (workflows/host-move.ts) applies them, the new host's worker lays the workspace out
// (activities/workspace-adopt.ts), and the client finds the runs (client/host-move.ts).
//
// `copy`: the files come along, from `source` on the new host (the old disk mounted there, a
// restored backup; the workspace's path below it) or, without a source, from the workspace's
// own path on the new host (a disk that moved with its mount point). No files there is an
// error: a run never goes on in an empty directory it did not ask for.
// `lost`: the files are gone for good; the run goes on in an empty workspace on the new host,
// and its log says so in words a human reads (`workspace.moved` with files: lost).
import { z } from 'zod';
import { lazySchema } from './lazy-schema';

/** A host name as it appears in a task queue name (and in KEEL_WORKSPACE_HOST). */
export const WORKSPACE_HOST_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

export const HOST_MOVE_FILES = ['copy', 'lost'] as const;
export type HostMoveFiles = (typeof HOST_MOVE_FILES)[number];

const hostName = (field: string) =>
  z.string().regex(new RegExp(WORKSPACE_HOST_PATTERN), `${field}: a host name of letters, digits, ".", "_" and "-" (at most 63), as a worker's KEEL_WORKSPACE_HOST`);

export const hostMoveSchema = lazySchema(() =>
  z
    .strictObject({
      /** One id for one operator command: every run it moves writes it beside the files, so runs that share a workspace lay it out once. */
      moveId: z.string().regex(/^[A-Za-z0-9._-]{1,80}$/, 'moveId: letters, digits, ".", "_" and "-" (at most 80)'),
      from: hostName('from'),
      to: hostName('to'),
      files: z.enum(HOST_MOVE_FILES),
      /** copy only: where the old files are readable on the new host; the workspace's own path below it. */
      source: z.string().startsWith('/', 'source: an absolute path on the new host').max(4096).optional(),
    })
    .refine((m) => m.from !== m.to, { message: 'to: the new host must not be the old one', path: ['to'] })
    .refine((m) => m.files === 'copy' || m.source === undefined, { message: 'source: only with files: copy (lost files have nowhere to come from)', path: ['source'] }),
);
export type HostMove = z.output<typeof hostMoveSchema>;

/** What a run answers a move: it moves, it is there already, or the move is not for it. */
export type HostMoveDecision =
  | { readonly type: 'move'; readonly from: string; readonly to: string }
  | { readonly type: 'already_there'; readonly host: string }
  | { readonly type: 'refused'; readonly code: 'shared_workspace' | 'not_on_host'; readonly message: string };

/** `host`: the run's workspace host now (null: a shared workspace, any worker serves it). */
export function decideHostMove(host: string | null, move: Pick<HostMove, 'from' | 'to'>): HostMoveDecision {
  if (host === null) return { type: 'refused', code: 'shared_workspace', message: 'this run has no workspace host (its workspace is shared by every worker): nothing to move' };
  // The same command sent again (a retry, a second operator): the run is where it was sent.
  if (host === move.to) return { type: 'already_there', host };
  if (host !== move.from) return { type: 'refused', code: 'not_on_host', message: `this run's workspace is on host "${host}", not "${move.from}"` };
  return { type: 'move', from: move.from, to: move.to };
}

/** The line a human reads in the run's log (and the CLI prints) once the run moved. */
export function describeHostMove(m: { workspace: string; from: string; to: string; files: HostMoveFiles; source?: string | undefined; copied?: number | undefined }): string {
  switch (m.files) {
    case 'copy': {
      const from = m.source === undefined ? `its own path on "${m.to}"` : `${m.source}${m.workspace}`;
      return `workspace ${m.workspace} moved from host "${m.from}" to "${m.to}" with its files (${m.copied ?? 0} copied from ${from})`;
    }
    case 'lost':
      return `workspace ${m.workspace} was lost in a host move from "${m.from}" to "${m.to}": its files are gone, and the run goes on in an empty workspace on "${m.to}"`;
    default: {
      const never: never = m.files;
      throw new Error(`unknown files ${JSON.stringify(never)}`);
    }
  }
}

/**
 * What the agent is told when its workspace was declared lost: otherwise its next tool calls
 * find an empty workspace and it cannot know why. Copied files need no word: nothing changed
 * for the agent.
 */
export function lostWorkspaceNotice(m: { workspace: string; from: string; to: string }): string {
  return `[Keel] Your workspace ${m.workspace} was lost: its host "${m.from}" went away and an operator moved this run to host "${m.to}" without the files. The workspace is empty now; anything you wrote or read there before is gone. Check what exists before relying on earlier results.`;
}
