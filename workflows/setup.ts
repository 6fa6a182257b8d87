// What a session or a goal loads once when it starts: the tools (built in, and the MCP
// servers' for a session that asks), the approval policy, and the tool definitions written
// to the conversation store, so every model call names them by id.
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { StoreActivities } from '../activities/conversation-store';
import type { createSetupActivities } from '../activities/setup';
import type { McpBridge } from '../activities/mcp/index';
import type { ToolActivities } from '../activities/tools/index';
import type { PolicyConfig, PolicyConfigInput, PolicyOrigin } from '../machines/policy';
import { finishTaskTool } from './planning';
import type { ToolEntry } from './turn-runner';
import { routed, workspaceHostGone, type WorkspaceRoute } from './workspace-host';
import { hasPatch, runFormat } from './run-format';

/** `origin` is absent in histories recorded before the policy said where it came from. */
export type Setup = { ok: true; policy: PolicyConfig; origin?: PolicyOrigin; tools: ToolEntry[]; toolsRef: string | null; storeId?: string | undefined } | { ok: false; error: string };

export interface SetupInput {
  workspace: string;
  storeDir: string;
  policy?: PolicyConfigInput | undefined;
  /** A session's own tools, with the MCP servers' when `mcp`; a goal's task agents get no ask_user and end with finish_task. */
  for: { kind: 'session'; mcp: boolean } | { kind: 'agents' };
  /** A workspace on one host's disk: setup reads its policy there (workflows/workspace-host.ts). */
  route?: WorkspaceRoute | null | undefined;
  /** The run's model, refused at setup when the worker has no price for it. */
  model?: string | undefined;
}

export async function loadSetup(input: SetupInput): Promise<Setup> {
  // One activity does it all; histories from before it was one replay the three.
  if (hasPatch('setup-one-activity')) {
    const route = input.route ?? null;
    const options = { startToCloseTimeout: '2 minutes', retry: { maximumAttempts: 3 } } as const;
    // A stamped run (workflows/run-format.ts) on a shared workspace without MCP servers loads it
    // as a local activity, in its first workflow task: a marker instead of three activity events
    // and the workflow task its result would wake (6 of a three-turn session's 122 events). Setup
    // on a workspace host's disk must run there, and MCP servers may take long to list.
    const local = route === null && runFormat() >= 1 && !(input.for.kind === 'session' && input.for.mcp);
    const { prepareSetup } = local
      ? proxyLocalActivities<ReturnType<typeof createSetupActivities>>(options)
      : proxyActivities<ReturnType<typeof createSetupActivities>>({ ...options, ...routed(route) });
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
    });
    return route === null
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
