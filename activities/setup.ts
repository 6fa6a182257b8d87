// What a session or a goal loads when a run starts, in one activity: the worker's tools (the
// built-in ones less those the caller leaves out, the worker's defined ones, plus the caller's own), the MCP servers' tools when asked, the
// approval policy, and the tool definitions written to the conversation store. One
// activity instead of three is six history events and two workflow tasks fewer for every
// run (docs/performance.md).
import type { PolicyConfig, PolicyConfigInput, PolicyOrigin } from '../machines/policy';
import type { McpToolList } from './mcp/activities';
import { DEFAULT_PRICES, noPriceMessage, priceOf, type PriceTable } from './llm-pricing';
import type { LoadedPolicy, ToolDescription } from './tools/index';
import type { ToolEntry } from '../workflows/protocol/tool-entry';
import { AGENT_TOOL, agentToolDescription, agentToolInputSchema } from '../machines/sub-agents';
import { listAgentFiles } from './agent-types';
import { keepAlive } from './keep-alive';

/**
 * The `agent` tool as the model is offered it: its description lists the named types (the
 * options' first, then the workspace's files not shadowed by one) and the files that could not
 * be read. Kind `interact`: the call itself is allowed in every mode (a deny rule may refuse
 * it), each of the child's own calls is judged by the policy. `readOnly`: several calls of one
 * message run side by side.
 */
async function agentToolEntry(workspace: string, optionTypes: { name: string; description: string }[]): Promise<ToolEntry> {
  const files = await listAgentFiles(workspace);
  const types = [...optionTypes, ...files.types.filter((t) => !optionTypes.some((o) => o.name === t.name))];
  return { spec: { name: AGENT_TOOL, description: agentToolDescription(types, files.problems), input_schema: agentToolInputSchema() }, readOnly: true, kind: 'interact' };
}

export interface SetupRequest {
  workspace: string;
  store: string;
  policy?: PolicyConfigInput;
  /** Also the MCP servers' tools (a session that asks for them). */
  mcp: boolean;
  /** Built-in tools left out (a goal's task agents get no ask_user). */
  omit: string[];
  /** Tools of the caller's own, after the built-in ones (finish_task). */
  extra: SetupTool[];
  /** The run's model: a run whose calls cannot be priced is refused here, before it spends anything. Absent in runs from before. */
  model?: string;
  /** Offer the `agent` tool (docs/sub-agents.md), listing these types with the workspace's `.keel/agents/` files. */
  agents?: { types: { name: string; description: string }[] };
}

/** A tool as setup lists it: the entry a run carries and hands its task agents (one schema: workflows/protocol/tool-entry.ts). */
export type SetupTool = ToolEntry;

export type SetupResult =
  | {
      ok: true;
      policy: PolicyConfig;
      origin: PolicyOrigin;
      tools: SetupTool[];
      toolsRef: string | null;
      /** The identity of the conversation store the run starts on (every later call is checked against it). */
      storeId?: string;
    }
  /** `refused`: the run cannot start as asked (a model without a price); nothing to wait out or retry. */
  | { ok: false; error: string; refused?: true };

interface Parts {
  listTools(): Promise<ToolDescription[]>;
  loadPolicy(request: { workspace: string; options?: PolicyConfigInput }): Promise<LoadedPolicy>;
  listMcpTools(): Promise<McpToolList>;
  storeSegment(request: { store: string; parent: string | null; items: unknown[]; storeId?: string }): Promise<string | null>;
  storeIdentity(request: { store: string }): Promise<string>;
  /** The worker's price table (the model table + KEEL_MODEL_PRICES). */
  prices?: PriceTable;
}

export function createSetupActivities(parts: Parts) {
  return {
    async prepareSetup(request: SetupRequest): Promise<SetupResult> {
      // A budget cannot stop what it cannot count: an unpriced model is refused before its first call.
      if (request.model !== undefined && priceOf(request.model, parts.prices ?? DEFAULT_PRICES) === null) return { ok: false, error: noPriceMessage(request.model), refused: true };
      // Listing MCP servers' tools may take long: a worker lost meanwhile is found by the heartbeat (workflows/setup.ts).
      return keepAlive(() => prepare(parts, request));
    },
  };
}

/** What `prepareSetup` does once the model is priced. */
async function prepare(parts: Parts, request: SetupRequest): Promise<SetupResult> {
  const [listed, loaded, mcp] = await Promise.all([
    parts.listTools(),
    parts.loadPolicy({ workspace: request.workspace, ...(request.policy !== undefined ? { options: request.policy } : {}) }),
    request.mcp ? parts.listMcpTools() : Promise.resolve({ tools: [], errors: [] }),
  ]);
  if (!loaded.ok) return { ok: false, error: loaded.error };
  const tools: SetupTool[] = [
    ...listed.filter((t) => !request.omit.includes(t.spec.name)).map((t) => ({ spec: t.spec, readOnly: t.readOnly, activityOptions: t.activityOptions, ...(t.local ? { local: true } : {}), ...(t.defined ? { kind: t.kind } : {}) })),
    ...mcp.tools.map((t) => ({ spec: t.spec, readOnly: t.readOnly, activityOptions: t.activityOptions, mcp: true })),
    ...request.extra,
    ...(request.agents !== undefined ? [await agentToolEntry(request.workspace, request.agents.types)] : []),
  ];
  const storeId = await parts.storeIdentity({ store: request.store });
  const toolsRef = await parts.storeSegment({ store: request.store, parent: null, items: tools.map((t) => t.spec), storeId });
  return { ok: true, policy: loaded.policy, origin: loaded.origin, tools, toolsRef, storeId };
}
