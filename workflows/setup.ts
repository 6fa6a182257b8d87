// What a session or a goal loads once when it starts: the tools (built in, and the MCP
// servers' for a session that asks), the approval policy, and the tool definitions written
// to the conversation store, so every model call names them by id.
import { ActivityFailure, condition, proxyActivities, proxyLocalActivities, TimeoutFailure } from '@temporalio/workflow';
import type { StoreActivities } from '../activities/conversation-store';
import type { createSetupActivities } from '../activities/setup';
import type { McpBridge } from '../activities/mcp/index';
import type { ToolActivities } from '../activities/tools/index';
import type { PolicyConfig, PolicyConfigInput, PolicyOrigin } from '../machines/policy';
import { finishTaskTool } from './planning';
import type { ToolEntry } from './turn-runner';
import { routed, workspaceHostGone, type WorkspaceRoute } from './workspace-host';
import { hasPatch, runFormat } from './run-format';
import { InfraWaiter } from './infra-wait';
import { transientStoreFailure } from './turn-results';
import { failureMessage } from './payloads';
import type { InfraService } from '../machines/infra-retry';

/** `origin` is absent in histories recorded before the policy said where it came from. */
export type Setup =
  | { ok: true; policy: PolicyConfig; origin?: PolicyOrigin; tools: ToolEntry[]; toolsRef: string | null; storeId?: string | undefined }
  /** `refused`: the run cannot start as asked (a model without a price): ended at once, never waited on. */
  | { ok: false; error: string; refused?: true };

export interface SetupInput {
  workspace: string;
  storeDir: string;
  policy?: PolicyConfigInput | undefined;
  /** A session's own tools, with the MCP servers' when `mcp`; a goal's task agents get no ask_user and end with finish_task. */
  for: { kind: 'session'; mcp: boolean } | { kind: 'agents' };
  /** A workspace on one host's disk: setup reads its policy there (workflows/workspace-host.ts); a function when an operator may move it meanwhile. */
  route?: WorkspaceRoute | null | undefined | (() => WorkspaceRoute | null);
  /** The run's model, refused at setup when the worker has no price for it. */
  model?: string | undefined;
  /** A session with sub-agents: the `agent` tool is offered, listing these types and the workspace's (docs/sub-agents.md). */
  agents?: { types: { name: string; description: string }[] } | undefined;
}

/** How long a setup activity's worker may be silent before its attempt is taken for lost. */
const SETUP_HEARTBEAT = '10 seconds';

/** `hostGoneThrows`: a call the workspace host did not take throws (the caller waits for the host) instead of answering `{ ok: false }`. */
export async function loadSetup(input: SetupInput, hostGoneThrows = false): Promise<Setup> {
  // One activity does it all; histories from before it was one replay the three.
  if (hasPatch('setup-one-activity')) {
    const route = routeOf(input);
    const options = { startToCloseTimeout: '2 minutes', retry: { maximumAttempts: 3 } } as const;
    // A stamped run (workflows/run-format.ts) on a shared workspace without MCP servers loads it
    // as a local activity, in its first workflow task: a marker instead of three activity events
    // and the workflow task its result would wake (6 of a three-turn session's 122 events). Setup
    // on a workspace host's disk must run there, and MCP servers may take long to list.
    const local = route === null && runFormat() >= 1 && !(input.for.kind === 'session' && input.for.mcp);
    // As an activity it heartbeats while it runs (activities/keep-alive.ts): an attempt taken by
    // a worker killed a moment later is tried again SETUP_HEARTBEAT after its last beat, not at
    // the two minutes' start-to-close. (Replay compares an activity's type and id, not its
    // timeouts: histories recorded without it replay.)
    const { prepareSetup } = local
      ? proxyLocalActivities<ReturnType<typeof createSetupActivities>>(options)
      : proxyActivities<ReturnType<typeof createSetupActivities>>({ ...options, heartbeatTimeout: SETUP_HEARTBEAT, ...routed(route) });
    const session = input.for.kind === 'session';
    const setup = prepareSetup({
      workspace: input.workspace,
      store: input.storeDir,
      ...(input.policy !== undefined ? { policy: input.policy } : {}),
      mcp: input.for.kind === 'session' && input.for.mcp,
      // Nobody talks to a task agent directly, so it gets no ask_user; it ends with finish_task.
      omit: session ? [] : ['ask_user'],
      extra: session ? [] : [{ spec: finishTaskTool, readOnly: false }],
      ...(input.model !== undefined ? { model: input.model } : {}),
      ...(input.agents !== undefined ? { agents: input.agents } : {}),
    });
    return route === null || hostGoneThrows
      ? setup
      : setup.catch((error: unknown) => {
          const gone = workspaceHostGone(error, route);
          if (gone !== null) return { ok: false, error: gone };
          throw error;
        });
  }
  const { listTools, loadPolicy } = proxyActivities<ToolActivities>({ startToCloseTimeout: '1 minute', retry: { maximumAttempts: 3 } });
  const { listMcpTools } = proxyActivities<McpBridge['activities']>({ startToCloseTimeout: '2 minutes', retry: { maximumAttempts: 2 } });
  const { storeSegment } = proxyActivities<StoreActivities>({ startToCloseTimeout: '1 minute', retry: { maximumAttempts: 5 } });
  const session = input.for.kind === 'session';
  const [builtin, loaded, mcp] = await Promise.all([
    listTools(),
    loadPolicy({ workspace: input.workspace, ...(input.policy !== undefined ? { options: input.policy } : {}) }),
    input.for.kind === 'session' && input.for.mcp ? listMcpTools() : Promise.resolve({ tools: [], errors: [] }),
  ]);
  if (!loaded.ok) return { ok: false, error: loaded.error };
  const own = (t: (typeof builtin)[number]): ToolEntry => ({ spec: t.spec, readOnly: t.readOnly, activityOptions: t.activityOptions });
  const tools: ToolEntry[] = session
    ? [...builtin.map(own), ...mcp.tools.map((t) => ({ spec: t.spec, readOnly: t.readOnly, activityOptions: t.activityOptions, mcp: true }))]
    : // Nobody talks to a task agent directly, so it gets no ask_user; it ends with finish_task.
      [...builtin.filter((t) => t.spec.name !== 'ask_user').map(own), { spec: finishTaskTool, readOnly: false }];
  const toolsRef = await storeSegment({ store: input.storeDir, parent: null, items: tools.map((t) => t.spec) });
  return { ok: true, policy: loaded.policy, ...(loaded.origin ? { origin: loaded.origin } : {}), tools, toolsRef };
}

/** Why setup could not finish: waited out (transient), or shown to a human (permanent). */
export type SetupFailure = { transient: true; service: InfraService; target: string; message: string } | { transient: false; message: string };

/** What the infrastructure table makes of a setup failure (machines/infra-retry.ts). */
export function setupFailure(error: unknown, route: WorkspaceRoute | null): SetupFailure {
  const store = transientStoreFailure(error);
  if (store !== null) return { transient: true, service: 'conversation store', target: store.store, message: store.message };
  const cause = error instanceof ActivityFailure ? error.cause : error;
  if (cause instanceof TimeoutFailure) {
    // Not taken by the host's worker (it is away), or lost with the worker that took it.
    if (route !== null) return { transient: true, service: 'workspace host', target: route.host, message: workspaceHostGone(error, route) ?? failureMessage(error) };
    return { transient: true, service: 'temporal', target: 'a worker of this task queue', message: failureMessage(error) };
  }
  // The activity's own error (not "Activity task failed"): what a human fixes.
  return { transient: false, message: failureMessage(cause ?? error) };
}

/**
 * Setup that waits out its infrastructure: a store that is restarting, a workspace host
 * that is rebooting (each try waits `route.waitMs` for the host to take it, then the next
 * try follows on the infrastructure table's backoff, for as long as its horizon). Resolves
 * with the setup, or with `{ ok: false }` for a failure a human must fix (`permanent`: the
 * caller suspends the run with the reason) or one that outlasted the horizon.
 */
export async function loadSetupWaiting(input: SetupInput, waiter: InfraWaiter): Promise<Setup & { permanent?: boolean }> {
  for (;;) {
    // Each try goes where the workspace is now: an operator may have moved it off a dead host.
    const route = routeOf(input);
    let failure: SetupFailure;
    try {
      const setup = await loadSetup(input, true);
      if (setup.ok) waiter.recovered();
      // A policy file that does not parse: the human fixes it (the patch is asked on failure only, so runs that set up record nothing).
      if (!setup.ok && setup.refused !== true && InfraWaiter.enabled()) return { ...setup, permanent: true };
      return setup;
    } catch (error) {
      // Recorded before setup waited: fails as it did.
      if (!InfraWaiter.enabled()) {
        const gone = workspaceHostGone(error, route);
        if (gone !== null) return { ok: false, error: gone };
        throw error;
      }
      failure = setupFailure(error, route);
    }
    if (!failure.transient) return { ok: false, error: failure.message, permanent: true };
    const decision = waiter.failed(failure.service, failure.target, failure.message);
    if (!decision.wait) return { ok: false, error: `${failure.message} (${decision.reason})`, permanent: true };
    // A move ends the wait at once (the same timer when nothing moves: the commands are those of before).
    await condition(() => routeOf(input) !== route, decision.delayMs);
  }
}

function routeOf(input: SetupInput): WorkspaceRoute | null {
  return (typeof input.route === 'function' ? input.route() : input.route) ?? null;
}
