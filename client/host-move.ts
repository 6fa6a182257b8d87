// `keel host move <from> <to>` and KeelClient.moveHost: every running session, goal and agent
// whose workspace is on <from> is sent the `moveWorkspaceHost` update (workflows/host-move.ts;
// machines/host-move.ts decides). The runs answer for themselves: a run on another host or on
// a shared workspace refuses (`not_on_host`, `shared_workspace`) and is counted as elsewhere,
// so no list of a host's runs has to be kept anywhere. Runs that share a workspace (a goal and
// its agents) are moved one after another — the first lays the workspace out on the new host,
// the others find it there — and different workspaces a few at a time.
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { hostMoveSchema, type HostMove, type HostMoveFiles } from '../machines/host-move';
import { moveWorkspaceHostUpdate } from '../workflows/definitions';
import { describeIssues } from '../workflows/payloads';
import { InvalidInputError, mapErrors, UpdateRejectedError } from './errors';

export interface MoveHostOptions {
  /** `copy` (the default): the files come along; `lost`: they are gone, and each run is told so in its log. */
  files?: HostMoveFiles;
  /** copy only: where the old host's files are readable on the new host (its disk mounted there, a restored backup); each workspace's own path below it. Default: the workspace's own path on the new host. */
  source?: string;
}

/** One running Keel workflow, as the visibility listing gives it. */
export interface RunOnRecord {
  id: string;
  kind: string | null;
  workspace: string | null;
}

export interface MovedRun extends RunOnRecord {
  outcome: 'moved' | 'already_there';
  /** What the run's log says: "… was lost in a host move …", or where its files came from. */
  message: string;
}

export interface MoveHostReport {
  moveId: string;
  from: string;
  to: string;
  files: HostMoveFiles;
  moved: MovedRun[];
  /** Runs whose workspace is on this host that could not be moved (they stay on <from>). */
  failed: (RunOnRecord & { error: string })[];
  /** Running runs whose workspace is on another host or shared. */
  elsewhere: number;
}

/** Why a run is not moved that is no failure: its workspace is not on <from>. */
const ELSEWHERE = new Set(['not_on_host', 'shared_workspace']);
const WORKSPACES_AT_ONCE = 4;

/** The move request, validated as the workflows validate it (InvalidInputError naming the field). */
export function hostMoveRequest(from: string, to: string, options: MoveHostOptions = {}): HostMove {
  const request = { moveId: `move-${randomUUID()}`, from, to, files: options.files ?? 'copy', ...(options.source !== undefined ? { source: options.source } : {}) };
  const parsed = hostMoveSchema.safeParse(request);
  if (!parsed.success) throw new InvalidInputError('moveHost', describeIssues(parsed.error.issues));
  return parsed.data;
}

export async function moveHostRuns(client: Client, runs: AsyncIterable<RunOnRecord>, request: HostMove): Promise<MoveHostReport> {
  const report: MoveHostReport = { moveId: request.moveId, from: request.from, to: request.to, files: request.files, moved: [], failed: [], elsewhere: 0 };
  const byWorkspace = new Map<string, RunOnRecord[]>();
  for await (const run of runs) {
    const key = run.workspace ?? run.id;
    byWorkspace.set(key, [...(byWorkspace.get(key) ?? []), run]);
  }
  const moveOne = async (run: RunOnRecord): Promise<void> => {
    try {
      const result = await mapErrors(run.id, 'moveWorkspaceHost', () => client.workflow.getHandle(run.id).executeUpdate(moveWorkspaceHostUpdate, { args: [request] }));
      report.moved.push({ ...run, outcome: result.outcome, message: result.message });
    } catch (error) {
      if (error instanceof UpdateRejectedError && error.code !== undefined && ELSEWHERE.has(error.code)) report.elsewhere += 1;
      else report.failed.push({ ...run, error: error instanceof Error ? error.message : String(error) });
    }
  };
  // Sessions and goals before agents: a goal that moves starts its next agents on the new host.
  const rank = (r: RunOnRecord) => (r.kind === 'agent' ? 1 : 0);
  const groups = [...byWorkspace.values()].map((g) => g.sort((a, b) => rank(a) - rank(b)));
  const lanes = Array.from({ length: Math.min(WORKSPACES_AT_ONCE, groups.length) }, async () => {
    for (let group = groups.shift(); group !== undefined; group = groups.shift()) for (const run of group) await moveOne(run);
  });
  await Promise.all(lanes);
  return report;
}
