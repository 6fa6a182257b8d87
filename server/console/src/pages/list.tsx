// Goals and sessions: each goal's text, search, sort, and a status picker.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, enc, Refused, say } from '../api';
import type { ListEntry } from '../types';
import { listDuration } from '../glance';
import { Badge, dateTime } from '../ui';

const STATUSES = ['planning', 'awaiting_plan_approval', 'executing', 'reviewing', 'blocked', 'goal_met', 'stopped', 'active', 'processing', 'awaiting_input', 'paused', 'suspended', 'closed', 'failed'];
type SortKey = 'startTime' | 'status' | 'pendingApprovals' | 'summary';

export function ListPage() {
  const [kind, setKind] = useState('');
  const [status, setStatus] = useState('');
  const [waiting, setWaiting] = useState(false);
  const [all, setAll] = useState(false);
  const [search, setSearch] = useState('');
  const [sort, setSort] = useState<SortKey>('startTime');
  const [items, setItems] = useState<ListEntry[] | null>(null);
  useEffect(() => {
    const q = new URLSearchParams();
    if (kind) q.set('kind', kind);
    if (status) q.set('status', status);
    if (waiting) q.set('waiting', 'true');
    if (all) q.set('all', 'true');
    let stopped = false;
    const load = async () => {
      try {
        const r = await api<{ items: ListEntry[] }>('GET', `/api/workflows?${q}`);
        if (!stopped) setItems(r.items);
      } catch (e) {
        if (!(e instanceof Refused)) say(e instanceof Error ? e.message : String(e), true);
      }
    };
    void load();
    const timer = setInterval(() => void load(), 3000);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [kind, status, waiting, all]);
  const shown = useMemo(() => {
    const needle = search.trim().toLowerCase();
    const rows = (items ?? []).filter((i) => !needle || [i.id, i.summary ?? '', i.workspace ?? '', i.status ?? ''].some((s) => s.toLowerCase().includes(needle)));
    const cmp: Record<SortKey, (a: ListEntry, b: ListEntry) => number> = {
      startTime: (a, b) => b.startTime.localeCompare(a.startTime),
      status: (a, b) => (a.status ?? '').localeCompare(b.status ?? ''),
      pendingApprovals: (a, b) => b.pendingApprovals - a.pendingApprovals,
      summary: (a, b) => (a.summary ?? a.id).localeCompare(b.summary ?? b.id),
    };
    return [...rows].sort(cmp[sort]);
  }, [items, search, sort]);
  const value = (e: Event) => (e.target as HTMLInputElement).value;
  return (<div>
    <h2>Goals and sessions</h2>
    <form class="filters" aria-label="filters" onSubmit={(e: Event) => e.preventDefault()}>
      <div><label for="f-search">Search</label><input id="f-search" type="search" placeholder="goal text, id, workspace" value={search} onInput={(e: Event) => setSearch(value(e))} /></div>
      <div><label for="f-kind">Kind</label>
        <select id="f-kind" value={kind} onChange={(e: Event) => setKind(value(e))}>
          <option value="">goals and sessions</option><option value="goal">goals</option><option value="session">sessions</option><option value="agent">task agents</option>
        </select></div>
      <div><label for="f-status">Status</label>
        <select id="f-status" value={status} onChange={(e: Event) => setStatus(value(e))}>
          <option value="">any</option>{STATUSES.map((s) => (<option value={s}>{s.replaceAll('_', ' ')}</option>))}
        </select></div>
      <div><label for="f-sort">Sort by</label>
        <select id="f-sort" value={sort} onChange={(e: Event) => setSort(value(e) as SortKey)}>
          <option value="startTime">newest first</option><option value="status">status</option><option value="pendingApprovals">most waiting</option><option value="summary">goal text</option>
        </select></div>
      <div><label class="inline"><input type="checkbox" checked={waiting} onChange={(e: Event) => setWaiting((e.target as HTMLInputElement).checked)} />waiting for a human</label></div>
      <div><label class="inline"><input type="checkbox" checked={all} onChange={(e: Event) => setAll((e.target as HTMLInputElement).checked)} />include ended</label></div>
    </form>
    <table aria-label="goals and sessions">
      <thead><tr>{['Goal or session', 'Kind', 'Status', 'Waiting', 'Workspace', 'Started', 'Time'].map((c) => (<th scope="col">{c}</th>))}</tr></thead>
      <tbody>
        {items === null ? (<tr><td colspan={7}>Loading…</td></tr>) : shown.length === 0 ? (<tr><td colspan={7}>None.</td></tr>) : null}
        {shown.map((i) => {
          const page = i.kind === 'goal' || i.kind === 'session' || i.kind === 'agent' ? i.kind : null;
          return (<tr key={i.id}>
            <td>{page ? (<a href={`#/${page}/${enc(i.id)}`}>{i.summary ?? i.id}</a>) : (i.summary ?? i.id)}{i.summary ? (<div class="muted id">{i.id}</div>) : null}</td>
            <td>{i.kind ?? ''}</td>
            <td><Badge status={i.status} /></td>
            <td>{i.pendingApprovals ? String(i.pendingApprovals) : i.status === 'awaiting_plan_approval' ? 'plan' : ''}{i.infraWaiting ? (<div class="muted" title="waiting out an outage (KeelWaiting)">for {i.infraWaiting}</div>) : null}</td>
            <td class="muted">{i.workspace ?? ''}</td>
            <td class="muted">{dateTime(i.startTime)}</td>
            <td class="muted">{listDuration(i.startTime, i.closeTime)}</td>
          </tr>);
        })}
      </tbody>
    </table>
  </div>);
}
