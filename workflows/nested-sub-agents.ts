// A sub-agent's own sub-agents: a child started by an `agent` call whose depth is below the cap
// has `agent` among its tools (machines/sub-agents.ts planChild) and is then a parent in turn,
// one level deeper, under the same session, caps and option types. A goal's task agent has no
// delegation and no such tool: null.
import { AGENT_TOOL } from '../machines/sub-agents';
import type { AgentInput } from './protocol/agent';
import { SubAgents, type SubAgentParent } from './sub-agents';

type AgentHooks = Pick<SubAgentParent, 'tools' | 'toolsRef' | 'policy' | 'turn' | 'conversation' | 'route' | 'emit' | 'settled' | 'changed'>;

export function nestedSubAgents(input: AgentInput, agentId: string, hooks: AgentHooks): SubAgents | null {
  const d = input.delegation;
  if (d === undefined || !input.tools.some((t) => t.spec.name === AGENT_TOOL)) return null;
  return new SubAgents({
    ...hooks,
    parentId: agentId,
    sessionId: d.sessionId,
    depth: d.depth,
    caps: d.caps,
    ...(d.treeToken !== undefined ? { treeToken: d.treeToken } : {}),
    types: d.types ?? {},
    base: {
      workspace: input.workspace,
      ...(input.workspaceHost !== undefined ? { workspaceHost: input.workspaceHost } : {}),
      ...(input.workspaceHostWaitMs !== undefined ? { workspaceHostWaitMs: input.workspaceHostWaitMs } : {}),
      storeDir: input.storeDir,
      ...(input.storeId !== undefined ? { storeId: input.storeId } : {}),
      maxTokens: input.maxTokens,
      headless: input.headless,
      approvalTimeoutMs: input.approvalTimeoutMs,
      maxParallelTools: input.maxParallelTools,
      ...(input.retryBackoffMs !== undefined ? { retryBackoffMs: input.retryBackoffMs } : {}),
      modelActivity: input.modelActivity,
      ...(input.promptCacheTtl !== undefined ? { promptCacheTtl: input.promptCacheTtl } : {}),
    },
    model: input.model,
    system: d.system,
    thinking: input.thinking,
  });
}
