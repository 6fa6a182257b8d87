// The console's sub-agent tree is folded from the session's own stream (server/console/src/sub-agents.ts):
// each child with its type, status, spend and what it ran, in the order the children started.
import { describe, expect, it } from 'vitest';
import { subAgentRows } from '../../server/console/src/sub-agents';

const at = '2026-11-29T15:00:00.000Z';
describe('console: sub-agent rows', () => {
  it('a child per subagent.started; tools and the finish fold into it; a running child has no spend yet', () => {
    const rows = subAgentRows([
      { kind: 'subagent.started', seq: 1, at, callId: 'toolu_1', agentId: 's/agent-toolu_1', label: 'research-1', agentType: 'research', fork: false, depth: 1 },
      { kind: 'subagent.started', seq: 2, at, callId: 'toolu_2', agentId: 's/agent-toolu_2', label: 'fork-2', agentType: null, fork: true, depth: 1 },
      { kind: 'tool.call', seq: 3, at, callId: 'toolu_x' },
      { kind: 'subagent.tool', seq: 4, at, callId: 'toolu_1', agentId: 's/agent-toolu_1', label: 'research-1', command: 'npm test', file: null },
      { kind: 'subagent.tool', seq: 5, at, callId: 'toolu_1', agentId: 's/agent-toolu_1', label: 'research-1', command: null, file: 'notes.md' },
      { kind: 'subagent.finished', seq: 6, at, callId: 'toolu_1', agentId: 's/agent-toolu_1', label: 'research-1', outcome: 'succeeded', summary: 'done', usage: { inputTokens: 120, outputTokens: 30, costUsd: 0.0021 }, steps: 2 },
    ]);
    expect(rows).toEqual([
      { agentId: 's/agent-toolu_1', callId: 'toolu_1', label: 'research-1', type: 'research', depth: 1, status: 'succeeded', summary: 'done', usage: { inputTokens: 120, outputTokens: 30, costUsd: 0.0021 }, steps: 2, commands: ['npm test'], files: ['notes.md'] },
      { agentId: 's/agent-toolu_2', callId: 'toolu_2', label: 'fork-2', type: 'fork', depth: 1, status: 'running', summary: null, usage: null, steps: null, commands: [], files: [] },
    ]);
  });
});
