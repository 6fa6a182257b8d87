// Shared pieces: badges, diffs, budget bars and the plan graph.
import type { Task, Usage } from './types';

export const Badge = ({ status }: { status: string | null | undefined }) => (<span class={`badge ${status ?? ''}`}>{(status ?? 'unknown').replaceAll('_', ' ')}</span>);

export function DiffView({ diff }: { diff: string }) {
  const cls = (l: string) => (l.startsWith('+') && !l.startsWith('+++') ? 'add' : l.startsWith('-') && !l.startsWith('---') ? 'del' : l.startsWith('@@') ? 'hunk' : '');
  // The newline goes in as a value: JSX drops the line breaks of its source between tags.
  return (<pre class="diff" aria-label="diff of the change">{diff.split('\n').map((l) => (<span class={cls(l)}>{`${l}\n`}</span>))}</pre>);
}

export const time = (iso: string | undefined | null) => (iso ? new Date(iso).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' }) : '');
export const dateTime = (iso: string | undefined | null) => (iso ? new Date(iso).toLocaleString() : '');
export const usd = (n: number | null | undefined) => (typeof n === 'number' ? `$${n.toFixed(4)}` : '—');

export function UsageLine({ usage }: { usage: Usage | undefined }) {
  if (!usage) return null;
  return (<span class="muted usage">{usage.inputTokens} in · {usage.outputTokens} out · {usd(usage.costUsd)}</span>);
}

export function BudgetBars({ usage, limits }: { usage: Usage; limits: Partial<Record<'inputTokens' | 'outputTokens' | 'costUsd', number | null>> }) {
  const rows: Array<[string, number, number | null | undefined]> = [
    ['input tokens', usage.inputTokens, limits.inputTokens],
    ['output tokens', usage.outputTokens, limits.outputTokens],
    ['cost (USD)', usage.costUsd, limits.costUsd],
  ];
  return (<div class="bars">
    {rows.map(([name, used, limit]) => {
      const id = `bar-${name.replace(/\W+/g, '-')}`;
      const label = name.startsWith('cost') ? used.toFixed(4) : String(used);
      return [
        (<label for={id} class="inline">{name}</label>),
        limit ? (<meter id={id} min="0" max={limit} value={Math.min(used, limit)} high={limit * 0.8}></meter>) : (<output id={id} class="muted">no limit set</output>),
        (<span class="muted">{limit ? `${label} / ${limit}` : label}</span>),
      ];
    })}
  </div>);
}

/** The plan as a dependency graph: one column per depth, an arrow per dependency. */
export function PlanGraph({ tasks }: { tasks: Task[] }) {
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const depth = new Map<string, number>();
  const depthOf = (t: Task, seen = new Set<string>()): number => {
    const known = depth.get(t.id);
    if (known !== undefined) return known;
    if (seen.has(t.id)) return 0;
    seen.add(t.id);
    const d = t.dependencies.length ? 1 + Math.max(...t.dependencies.map((x) => (byId.has(x) ? depthOf(byId.get(x)!, seen) : 0))) : 0;
    depth.set(t.id, d);
    return d;
  };
  const cols: Task[][] = [];
  for (const t of tasks) (cols[depthOf(t)] ??= []).push(t);
  const W = 190, H = 52, GX = 60, GY = 18;
  const pos = new Map<string, { x: number; y: number }>();
  cols.forEach((col, x) => col.forEach((t, y) => pos.set(t.id, { x: 10 + x * (W + GX), y: 10 + y * (H + GY) })));
  const width = 20 + cols.length * (W + GX) - GX;
  const height = 20 + Math.max(1, ...cols.map((c) => c.length)) * (H + GY) - GY;
  const label = `plan graph: ${tasks.map((t) => `${t.id} (${t.status})${t.dependencies.length ? ` after ${t.dependencies.join(', ')}` : ''}`).join('; ')}`;
  return (<figure class="graph">
    <svg viewBox={`0 0 ${width} ${height}`} width={width} height={height} role="img" aria-label={label}>
      <defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" class="arrowhead" /></marker></defs>
      {tasks.flatMap((t) =>
        t.dependencies
          .filter((d) => pos.has(d))
          .map((d) => {
            const a = pos.get(d)!, b = pos.get(t.id)!;
            return (<path key={`${d}>${t.id}`} d={`M${a.x + W},${a.y + H / 2} C${a.x + W + GX / 2},${a.y + H / 2} ${b.x - GX / 2},${b.y + H / 2} ${b.x},${b.y + H / 2}`} marker-end="url(#arrow)" />);
          }),
      )}
      {tasks.map((t) => {
        const p = pos.get(t.id)!;
        return (<g key={t.id} class={`node ${t.status}`} transform={`translate(${p.x},${p.y})`}>
          <title>{t.id}: {t.title} ({t.status})</title>
          <rect width={W} height={H} rx="6" />
          <text x="8" y="20" font-weight="600">{t.id} · {t.status}</text>
          <text x="8" y="38">{t.title.length > 28 ? `${t.title.slice(0, 27)}…` : t.title}</text>
        </g>);
      })}
    </svg>
  </figure>);
}
