// A session's sub-agents from its options (`agents`, docs/sub-agents.md): the parent the
// session is to its children (depth 0, its caps and types, what every child inherits), and
// what setup needs to offer the `agent` tool. Absent option: neither (no tool, no children).
import { resolveCaps } from '../machines/sub-agents';
import type { ResolvedSessionOptions } from './session-options';
import { SubAgents, type SubAgentParent } from './sub-agents';

type SessionHooks = Pick<SubAgentParent, 'tools' | 'toolsRef' | 'storeId' | 'policy' | 'turn' | 'conversation' | 'route' | 'emit' | 'settled' | 'changed'>;

export function sessionSubAgents(options: ResolvedSessionOptions, sessionId: string, hooks: SessionHooks, startedBefore = 0): SubAgents | null {
  if (options.agents === undefined) return null;
  const { types, ...caps } = options.agents;
  return new SubAgents({
    ...hooks,
    parentId: sessionId,
    sessionId,
    depth: 0,
    caps: resolveCaps(caps),
    types: types ?? {},
    base: {
      workspace: options.workspace,
      ...(options.workspaceHost !== undefined ? { workspaceHost: options.workspaceHost, workspaceHostWaitMs: options.workspaceHostWaitMs } : {}),
      storeDir: options.storeDir,
      maxTokens: options.maxTokens,
      headless: options.headless,
      approvalTimeoutMs: options.approvalTimeoutMs,
      maxParallelTools: options.maxParallelTools,
      ...(options.retryBackoffMs !== undefined ? { retryBackoffMs: options.retryBackoffMs } : {}),
      modelActivity: options.modelActivity,
      // The session's cache lifetime: a fork's request is its parent's prefix, marked the same way.
      ...(options.promptCacheTtl !== undefined ? { promptCacheTtl: options.promptCacheTtl } : {}),
    },
    model: options.model,
    system: options.system ?? null,
    // A fork thinks as its parent (the same request prefix); a type says its own.
    thinking: options.thinking !== undefined && 'budgetTokens' in options.thinking ? { budgetTokens: options.thinking.budgetTokens } : undefined,
  }, startedBefore);
}

/** Setup's part: offer the `agent` tool, listing the types the options give. */
export function agentToolSetup(agents: ResolvedSessionOptions['agents']): { agents?: { types: { name: string; description: string }[] } } {
  if (agents === undefined) return {};
  return { agents: { types: Object.entries(agents.types ?? {}).map(([name, t]) => ({ name, description: t.description })) } };
}
