// How `keel chat` shows a session's sub-agents (docs/sub-agents.md): indented under the
// `agent` call that started them, one line when a child starts, one per command it runs or file
// it writes (as its reports tell the session), one when it ends with its outcome and spend.
import type { LogEntry } from '../../workflows/definitions';

type SubAgentEvent = Extract<LogEntry, { kind: 'subagent.started' | 'subagent.tool' | 'subagent.finished' }>;

export function isSubAgentEvent(e: { kind: string }): e is SubAgentEvent {
  return e.kind === 'subagent.started' || e.kind === 'subagent.tool' || e.kind === 'subagent.finished';
}

/** The line for one sub-agent event, indented by the child's depth (a session's child: one level). */
export function subAgentLine(e: SubAgentEvent): string {
  switch (e.kind) {
    case 'subagent.started':
      return `${'    '.repeat(e.depth)}↳ ${e.label} started${e.fork ? ' (fork)' : e.agentType !== null ? ` (${e.agentType})` : ''}`;
    case 'subagent.tool':
      return `      ${e.label}: ${e.command !== null ? `$ ${e.command}` : `wrote ${e.file ?? ''}`}`;
    case 'subagent.finished':
      return `    ↳ ${e.label} ${e.outcome}: ${e.summary.split('\n')[0]?.slice(0, 100) ?? ''} (${e.usage.inputTokens} in / ${e.usage.outputTokens} out, $${e.usage.costUsd.toFixed(4)})`;
    default: {
      const never: never = e;
      return String(never);
    }
  }
}
