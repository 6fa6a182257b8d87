// KEEL_WORKSPACE_HOST=<name>: the workspaces this worker sees are on this host's disk only
// (not shared with the rest of the fleet). Besides the fleet's task queue it then polls
// `<taskQueue>@<name>` for activities only: the setup, tool and MCP calls of sessions and
// goals started with `workspaceHost: <name>` (workflows/workspace-host.ts). Unset: every
// worker serves every workspace (a shared disk), as before.
import { WORKSPACE_HOST_PATTERN, workspaceQueue } from '../workflows/workspace-host';

/** The host name this worker serves workspaces for, or null; throws one line when it is not a valid name. */
export function workspaceHostOf(env: NodeJS.ProcessEnv = process.env): string | null {
  const host = env.KEEL_WORKSPACE_HOST?.trim();
  if (!host) return null;
  if (!WORKSPACE_HOST_PATTERN.test(host)) {
    throw new Error(`KEEL_WORKSPACE_HOST=${JSON.stringify(host)}: a host name of letters, digits, ".", "_" and "-" (at most 63), as sessions name it in workspaceHost`);
  }
  return host;
}

/** The start-up line of a worker serving its host's workspaces (shared workspaces, as before, say nothing). */
export function workspaceHostLine(taskQueue: string, host: string): string {
  return `keel worker: workspaces: on this host's disk, served on task queue "${workspaceQueue(taskQueue, host)}" (KEEL_WORKSPACE_HOST=${host})`;
}
