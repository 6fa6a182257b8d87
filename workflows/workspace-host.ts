// Workspace affinity. A workspace on one host's disk (not shared) must be worked on by
// that host: a worker started with KEEL_WORKSPACE_HOST=<name> also polls the activity
// task queue `<taskQueue>@<name>` (worker/workspace-host.ts), and a session or goal started
// with `workspaceHost: <name>` (the client fills it in from its own KEEL_WORKSPACE_HOST, as
// it found the workspace on its own disk) sends everything that touches the workspace there:
// its setup (the workspace's policy file), tool calls, MCP calls. Model calls and the
// conversation store stay on the shared queue, so the rest of the fleet still serves them.
//
// When that host is gone nobody polls its queue, and a call waits at most `waitMs` to be
// taken (Temporal's schedule-to-start timeout, which is never retried): then it fails with
// "workspace host … is not polling", and it never ran, so nothing ran twice and nothing ran
// on an empty directory elsewhere. Without `workspaceHost` nothing changes (shared
// workspaces: any worker, as before), and the commands a workflow emits are the same.
import { ActivityFailure, TimeoutFailure, type ActivityOptions } from '@temporalio/workflow';

/** How long a call waits for the workspace host by default (the options resolvers fill it in). */
export const DEFAULT_WORKSPACE_HOST_WAIT_MS = 60_000;

export { WORKSPACE_HOST_PATTERN } from '../machines/host-move';

/** The task queue a workspace host's worker polls for the activities of its workspaces. */
export function workspaceQueue(taskQueue: string, host: string): string {
  return `${taskQueue}@${host}`;
}

export interface WorkspaceRoute {
  host: string;
  taskQueue: string;
  waitMs: number;
}

/** The route of a run started with `workspaceHost`, or null for a shared workspace. */
export function workspaceRoute(workflowTaskQueue: string, host: string | undefined, waitMs: number): WorkspaceRoute | null {
  if (host === undefined) return null;
  return { host, taskQueue: workspaceQueue(workflowTaskQueue, host), waitMs };
}

/**
 * Where a run's workspace is now. A host that never comes back is replaced by an operator
 * (workflows/host-move.ts): every later call goes to the new host, so whoever sends one reads
 * `route` when it sends it. A move makes a new route object: a call that was sent on the old
 * one sees the change by identity.
 */
export class WorkspaceRouting {
  private current: WorkspaceRoute | null;

  constructor(
    private readonly taskQueue: string,
    host: string | undefined,
    private readonly waitMs: number,
  ) {
    this.current = workspaceRoute(taskQueue, host, waitMs);
  }

  get route(): WorkspaceRoute | null {
    return this.current;
  }

  get host(): string | null {
    return this.current?.host ?? null;
  }

  moveTo(host: string): void {
    this.current = { host, taskQueue: workspaceQueue(this.taskQueue, host), waitMs: this.waitMs };
  }
}

/** Activity options that send a call to the workspace host (none for a shared workspace). */
export function routed(route: WorkspaceRoute | null): Pick<ActivityOptions, 'taskQueue' | 'scheduleToStartTimeout'> {
  return route === null ? {} : { taskQueue: route.taskQueue, scheduleToStartTimeout: route.waitMs };
}

/** The message for a call no worker of the workspace host took in time; null for any other failure. */
export function workspaceHostGone(error: unknown, route: WorkspaceRoute | null): string | null {
  if (route === null) return null;
  const cause = error instanceof ActivityFailure ? error.cause : error;
  if (!(cause instanceof TimeoutFailure) || cause.timeoutType !== 'SCHEDULE_TO_START') return null;
  return (
    `workspace host "${route.host}" is not polling task queue "${route.taskQueue}": no worker there took the call within ${Math.round(route.waitMs / 1000)} s, so it did not run. ` +
    `The workspace is on that host's disk only; start a worker there with KEEL_WORKSPACE_HOST=${route.host}.`
  );
}
