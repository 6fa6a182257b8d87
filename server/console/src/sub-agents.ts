// A run's sub-agents as the console shows them (docs/sub-agents.md "What the parent's human
// sees"): folded from the run's own stream — `subagent.started` / `subagent.tool` /
// `subagent.finished` under the `agent` call that started each child. Pure, so a unit test can
// replay events through it; sub-agent-tree.tsx renders it.
import type { LogEntry } from './run-state';

export interface SubAgentRow {
  agentId: string;
  callId: string;
  label: string;
  /** The named type, `fork`, or null (a general-purpose child). */
  type: string | null;
  depth: number;
  status: 'running' | 'succeeded' | 'failed' | 'cancelled';
  summary: string | null;
  usage: { inputTokens: number; outputTokens: number; costUsd: number } | null;
  steps: number | null;
  commands: string[];
  files: string[];
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

/** The children a run's events tell of, in the order they started. */
export function subAgentRows(events: readonly LogEntry[]): SubAgentRow[] {
  const rows = new Map<string, SubAgentRow>();
  for (const e of events) {
    const agentId = str(e.agentId);
    if (agentId === null || !e.kind.startsWith('subagent.')) continue;
    if (e.kind === 'subagent.started') {
      rows.set(agentId, { agentId, callId: str(e.callId) ?? '', label: str(e.label) ?? agentId, type: e.fork === true ? 'fork' : str(e.agentType), depth: num(e.depth), status: 'running', summary: null, usage: null, steps: null, commands: [], files: [] });
      continue;
    }
    const row = rows.get(agentId);
    if (row === undefined) continue;
    if (e.kind === 'subagent.tool') {
      const command = str(e.command);
      const file = str(e.file);
      if (command !== null) row.commands.push(command);
      if (file !== null) row.files.push(file);
    } else if (e.kind === 'subagent.finished') {
      const outcome = str(e.outcome);
      row.status = outcome === 'succeeded' || outcome === 'failed' || outcome === 'cancelled' ? outcome : 'failed';
      row.summary = str(e.summary);
      const u = e.usage as Record<string, unknown> | undefined;
      row.usage = u ? { inputTokens: num(u.inputTokens), outputTokens: num(u.outputTokens), costUsd: num(u.costUsd) } : null;
      row.steps = num(e.steps);
    }
  }
  return [...rows.values()];
}
