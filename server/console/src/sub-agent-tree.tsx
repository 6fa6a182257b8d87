// A run's sub-agents as a tree under the session (or under a sub-agent that delegated in turn):
// each child's name and type, status, steps, tokens and cost, what it ran and wrote, and a link
// to its own page (its model text, tool calls and events, and its own children there).
import { enc } from './api';
import type { LogEntry } from './run-state';
import { subAgentRows } from './sub-agents';

export function SubAgentTree({ events }: { events: readonly LogEntry[] }) {
  const rows = subAgentRows(events);
  if (rows.length === 0) return null;
  return (<section class="card sub-agents" aria-labelledby="sub-agents-title">
    <h3 id="sub-agents-title">Sub-agents ({rows.length})</h3>
    <ul class="tree" role="tree" aria-label="sub-agents">
      {rows.map((r) => (<li key={r.agentId} role="treeitem" class={`sub-agent ${r.status}`} data-agent={r.agentId} data-status={r.status}>
        <a href={`#/agent/${enc(r.agentId)}`}><strong>{r.label}</strong></a>{' '}
        <span class="muted">{r.type ?? 'general'}</span>{' '}
        <span class={`badge ${r.status === 'running' ? 'running' : r.status === 'succeeded' ? '' : 'failed'}`}>{r.status}</span>{' '}
        <span class="usage">{r.usage ? `${r.steps ?? 0} steps · ${r.usage.inputTokens.toLocaleString()} in / ${r.usage.outputTokens.toLocaleString()} out · $${r.usage.costUsd.toFixed(4)}` : '…'}</span>
        {r.commands.length + r.files.length > 0
          ? (<ul class="muted">{[...r.commands.map((c) => `$ ${c}`), ...r.files.map((f) => `wrote ${f}`)].map((line) => (<li key={line}><code>{line}</code></li>))}</ul>)
          : null}
        {r.summary ? (<details><summary>answer</summary><p class="pre">{r.summary}</p></details>) : null}
      </li>))}
    </ul>
  </section>);
}
