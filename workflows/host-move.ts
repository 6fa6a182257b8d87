// The `moveWorkspaceHost` update of a session, goal or agent (machines/host-move.ts decides,
// this applies): the new host's worker lays the workspace out first (its files copied, or an
// empty workspace on the operator's word that they are lost; activities/workspace-adopt.ts),
// and only then does the run's route change, so a failed copy leaves the run where it was.
// Durable: the route is the workflow's own state, changed by an update in its history, and
// carried into the next run by continue-as-new (the run's options name the new host).
//
// A tool call in flight when the move comes: one that waits for the old host (its task was
// never taken, or it waits between tries) is sent to the new host — it never ran, so it runs
// once; a command the old host had started when it died ends with that host (its heartbeat
// time-out; run_command has one attempt) and is not run again (workflows/turn-tools.ts).
import { proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { createWorkspaceAdoptActivities } from '../activities/workspace-adopt';
import { decideHostMove, describeHostMove, hostMoveSchema, lostWorkspaceNotice, type HostMove } from '../machines/host-move';
import { moveWorkspaceHostUpdate, type MoveWorkspaceHostResult } from './definitions';
import type { WorkspaceMovedEvent } from './log-entries';
import { failureMessage, parsePayload } from './payloads';
import { refusal, validated } from './refusal';
import { workspaceQueue, type WorkspaceRouting } from './workspace-host';
import { hasPatch } from './run-format';

/** The agent is told when its workspace was declared lost (asked only when one is: other histories are unchanged). */
const WORKSPACE_LOST_NOTICE_PATCH = 'workspace-lost-notice';

/** How long the new host has to take the copy: it is up (the operator just started it), or the move fails and nothing changes. */
const NEW_HOST_WAIT = '2 minutes';

export interface HostMoveHost {
  workspace: string;
  routing: WorkspaceRouting;
  /** Runs work on the run's serial queue (its log entry, its details refreshed). */
  post(work: () => void): void;
  publish(event: WorkspaceMovedEvent): void;
  /** Tells the run's agent that its files are gone (on the run's queue, after the move's log entry). */
  tellAgent?(notice: string): void;
}

export function hostMoveHandler(h: HostMoveHost): void {
  let moving = false;
  const parse = (raw: unknown): HostMove => parsePayload(hostMoveSchema, raw, 'moveWorkspaceHost');
  const check = (move: HostMove): void => {
    const decision = decideHostMove(h.routing.host, move);
    if (decision.type === 'refused') throw refusal(decision.code, decision.message);
    if (decision.type === 'move' && moving) throw refusal('move_in_progress', `a move of this run's workspace host is in progress; send it again once it is done`);
  };
  setHandler(
    moveWorkspaceHostUpdate,
    async (raw): Promise<MoveWorkspaceHostResult> => {
      const move = parse(raw);
      check(move);
      if (decideHostMove(h.routing.host, move).type === 'already_there') {
        return { outcome: 'already_there', host: move.to, workspace: h.workspace, files: move.files, message: `workspace ${h.workspace} is on host "${move.to}" already` };
      }
      moving = true;
      try {
        const { adoptWorkspace } = proxyActivities<ReturnType<typeof createWorkspaceAdoptActivities>>({
          taskQueue: workspaceQueue(workflowInfo().taskQueue, move.to),
          scheduleToStartTimeout: NEW_HOST_WAIT,
          startToCloseTimeout: '1 hour',
          retry: { maximumAttempts: 3, nonRetryableErrorTypes: ['host_move_refused'] },
        });
        let copied: number;
        try {
          ({ copied } = await adoptWorkspace({ workspace: h.workspace, moveId: move.moveId, from: move.from, to: move.to, files: move.files, ...(move.source !== undefined ? { source: move.source } : {}) }));
        } catch (error) {
          throw refusal('host_move_failed', `the run stays on host "${move.from}": host "${move.to}" could not lay out workspace ${h.workspace}: ${failureMessage(error)} (is a worker with KEEL_WORKSPACE_HOST=${move.to} running?)`);
        }
        h.routing.moveTo(move.to);
        const message = describeHostMove({ workspace: h.workspace, from: move.from, to: move.to, files: move.files, source: move.source, copied });
        h.post(() => {
          h.publish({ kind: 'workspace.moved', moveId: move.moveId, workspace: h.workspace, from: move.from, to: move.to, files: move.files, ...(move.source !== undefined ? { source: move.source } : {}), copied, message });
          if (move.files === 'lost' && h.tellAgent !== undefined && hasPatch(WORKSPACE_LOST_NOTICE_PATCH)) h.tellAgent(lostWorkspaceNotice({ workspace: h.workspace, from: move.from, to: move.to }));
        });
        return { outcome: 'moved', host: move.to, workspace: h.workspace, files: move.files, message };
      } finally {
        moving = false;
      }
    },
    { validator: (raw) => check(validated(() => parse(raw))), description: "Moves the run's workspace to another host (keel host move): its files copied there, or declared lost" },
  );
}
