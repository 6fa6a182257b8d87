// Every activity the Keel worker runs is registered from here.
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { createStoreActivities } from './conversation-store';
import { createModelActivities } from './llm';
import { loadPriceTable } from './llm-pricing';
import { createMcpBridge, parseMcpConfig } from './mcp/index';
import { createAgentTypeActivities } from './agent-types';
import { createScheduleActivities } from './schedule-budget';
import { createSetupActivities } from './setup';
import { createToolActivities, type RunnableTool } from './tools/index';
import { extraReadPaths } from './tools/sandbox';
import { createWaitingAttributeActivities } from './waiting-attribute';
import { createWorkspaceAdoptActivities } from './workspace-adopt';
import { createCheckpointActivities } from './workspace-checkpoint';

export interface KeelActivities {
  activities: ReturnType<typeof createModelActivities> &
    ReturnType<typeof createStoreActivities> &
    ReturnType<typeof createToolActivities> &
    ReturnType<typeof createMcpBridge>['activities'] &
    ReturnType<typeof createSetupActivities> &
    ReturnType<typeof createWaitingAttributeActivities> &
    ReturnType<typeof createWorkspaceAdoptActivities> &
    ReturnType<typeof createCheckpointActivities> &
    ReturnType<typeof createAgentTypeActivities> &
    ReturnType<typeof createScheduleActivities>;
  /** Stops what the activities keep alive for the process (MCP servers). */
  close(): Promise<void>;
}

/** The activity functions, as workflow code sees them through proxyActivities. */
export type KeelActivityFunctions = KeelActivities['activities'];

/**
 * Builds the activities from the worker's environment, with the worker's own tools (defineTool). KEEL_MCP_CONFIG names a JSON or
 * YAML file `{ servers: { name: { command, args, env, … } } }`; a bad file fails the
 * worker at start rather than a session later.
 */
export function createActivities(env: NodeJS.ProcessEnv = process.env, options: { tools?: readonly RunnableTool[] } = {}): KeelActivities {
  const mcp = createMcpBridge(parseMcpConfig(readMcpConfig(env.KEEL_MCP_CONFIG), `KEEL_MCP_CONFIG ${env.KEEL_MCP_CONFIG ?? ''}`.trim()));
  const store = createStoreActivities(env);
  const tools = createToolActivities({ sandboxRead: extraReadPaths(env), ...(options.tools ? { tools: options.tools } : {}) });
  // One table for pricing calls and for refusing a run whose model has no price.
  const prices = loadPriceTable(env);
  return {
    activities: { ...createModelActivities({ env, prices }), ...store, ...tools, ...mcp.activities, ...createSetupActivities({ ...tools, ...store, ...mcp.activities, prices }), ...createWaitingAttributeActivities(), ...createWorkspaceAdoptActivities(), ...createCheckpointActivities(env), ...createAgentTypeActivities(), ...createScheduleActivities() },
    close: () => mcp.close(),
  };
}

function readMcpConfig(file: string | undefined): unknown {
  if (!file) return {};
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new Error(`KEEL_MCP_CONFIG=${file}: cannot read the file (${(error as Error).message})`, { cause: error });
  }
  try {
    return parseYaml(text) as unknown; // YAML is a superset of JSON
  } catch (error) {
    throw new Error(`KEEL_MCP_CONFIG=${file}: not valid JSON or YAML (${(error as Error).message})`, { cause: error });
  }
}
