// Goals on a schedule (docs/schedules.md): each schedule with its spec, next run, last runs
// (each a link to its goal), this month's spend against the monthly budget and why it is
// paused; pause with a note, resume, trigger now, backfill a range, delete (asked twice); and a
// form that makes one. Everything goes through /api/schedules, as the SDK and the CLI do.
import { useEffect, useState } from 'preact/hooks';
import type { z } from 'zod';
import type { scheduleDetailsResponse } from '../../../schedule-schemas';
import { act, api, enc, Refused, say } from '../api';
import { Badge, dateTime, usd } from '../ui';

type ScheduleDetails = z.infer<typeof scheduleDetailsResponse>;

const OVERLAPS = ['skip', 'buffer_one', 'cancel_other', 'allow_all'] as const;
const MODES = ['ask', 'read-only', 'auto-edit', 'full-auto'];

/** `90000` → `1m30s`: how the spec's milliseconds read. */
function duration(ms: number): string {
  const parts: string[] = [];
  let rest = ms;
  for (const [unit, size] of [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1_000]] as const) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)}${unit}`);
      rest %= size;
    }
  }
  return parts.join('') || `${ms}ms`;
}

/** The spec on one line: `cron "0 7 * * 1-5"`, `every 30s`, `calendar (2 entries)`. */
export function whenText(when: { kind: string; cron?: unknown; every?: unknown; at?: unknown }): string {
  if (when.kind === 'cron') return `cron "${String(when.cron)}"`;
  if (when.kind === 'interval') return `every ${typeof when.every === 'number' ? duration(when.every) : String(when.every)}`;
  if (when.kind === 'calendar') return `calendar (${Array.isArray(when.at) ? when.at.length : 0} entries)`;
  return when.kind;
}

/** A `datetime-local` value (the browser's zone) as ISO 8601 with its offset, as the API wants. */
const isoOf = (local: string) => new Date(local).toISOString();

function ScheduleCard({ s, reload }: { s: ScheduleDetails; reload: () => void }) {
  const [note, setNote] = useState('');
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [confirming, setConfirming] = useState(false);
  const path = `/api/schedules/${enc(s.id)}`;
  const run = async (label: string, sub: string, body?: unknown) => {
    if (await act(`${label} ${s.id}`, `${path}/${sub}`, body)) reload();
  };
  const remove = async () => {
    try {
      say(`delete ${s.id}…`);
      await api('DELETE', path);
      say(`delete ${s.id}: done`);
      reload();
    } catch (e) {
      if (!(e instanceof Refused)) say(`delete ${s.id}: ${e instanceof Error ? e.message : String(e)}`, true);
    }
  };
  const budget = s.spend.budgetUsd;
  const fid = (name: string) => `${name}-${s.id}`;
  return (<section class="card schedule" aria-label={`schedule ${s.id}`} data-schedule={s.id}>
    <h3>{s.goal || s.id}</h3>
    <div class="muted id">{s.id}{s.workspace ? ` · ${s.workspace}` : ''}</div>
    <dl class="facts">
      <dt>When</dt><dd class="spec">{whenText(s.spec.when)} · {s.spec.timeZone} · overlap {s.spec.overlap}</dd>
      <dt>Next run</dt><dd class="next-run">{s.paused ? 'none while paused' : s.nextRuns[0] ? dateTime(s.nextRuns[0]) : 'none'}</dd>
      <dt>State</dt><dd class="state">{s.paused ? (<span>paused{s.note ? ` (${s.note})` : ''}</span>) : (<span>running{s.note ? ` (${s.note})` : ''}</span>)}</dd>
      <dt>Spend in {s.spend.month}</dt>
      <dd class="spend">{usd(s.spend.spentUsd)}{budget !== null ? ` of ${usd(budget)}` : ' (no monthly budget)'}{s.spend.spent ? ' — spent: runs end at once' : ''}{s.spend.unknownRuns ? ` · ${s.spend.unknownRuns} run(s) of unknown cost` : ''}
        {budget !== null ? (<meter aria-label="monthly budget used" min="0" max={budget} value={Math.min(s.spend.spentUsd, budget)} high={budget * 0.8}></meter>) : null}
      </dd>
      {s.actions ? (<><dt>Counts</dt><dd class="counts">{s.actions.taken} started · {s.actions.skippedOverlap} skipped for overlap · {s.actions.missedCatchupWindow} missed</dd></>) : null}
    </dl>
    <table aria-label={`runs of ${s.id}`}>
      <thead><tr>{['Run', 'Status', 'Started', 'Cost', 'Summary'].map((c) => (<th scope="col">{c}</th>))}</tr></thead>
      <tbody>
        {s.runs.length === 0 ? (<tr><td colspan={5}>No runs this month.</td></tr>) : null}
        {s.runs.map((r) => (<tr key={r.workflowId} class="run">
          <td><a href={`#/goal/${enc(r.workflowId)}`}>{r.workflowId}</a></td>
          <td><Badge status={r.verdict ?? r.execution.toLowerCase()} /></td>
          <td class="muted">{dateTime(r.startTime)}</td>
          <td>{usd(r.costUsd)}</td>
          <td class="muted">{r.summary ?? ''}</td>
        </tr>))}
      </tbody>
    </table>
    <div class="actions">
      {s.paused ? (<button type="button" onClick={() => void run('resume', 'resume', note.trim() ? { note: note.trim() } : undefined)}>Resume</button>) : (<button type="button" onClick={() => void run('pause', 'pause', note.trim() ? { note: note.trim() } : undefined)}>Pause</button>)}
      <label for={fid('note')} class="inline">note</label>
      <input id={fid('note')} type="text" placeholder="why (shown with the schedule)" value={note} onInput={(e: Event) => setNote((e.target as HTMLInputElement).value)} />
      <button type="button" onClick={() => void run('trigger', 'trigger')}>Run now</button>
    </div>
    <form class="actions" aria-label={`backfill ${s.id}`} onSubmit={(e: Event) => {
      e.preventDefault();
      if (from && to) void run('backfill', 'backfill', { from: isoOf(from), to: isoOf(to) });
    }}>
      <label for={fid('from')} class="inline">backfill from</label>
      <input id={fid('from')} type="datetime-local" step="1" required value={from} onInput={(e: Event) => setFrom((e.target as HTMLInputElement).value)} />
      <label for={fid('to')} class="inline">to</label>
      <input id={fid('to')} type="datetime-local" step="1" required value={to} onInput={(e: Event) => setTo((e.target as HTMLInputElement).value)} />
      <button>Backfill</button>
    </form>
    <div class="actions">
      {confirming ? (<>
        <span>Delete {s.id}? Its runs are left as they are.</span>
        <button type="button" class="danger" onClick={() => void remove()}>Yes, delete</button>
        <button type="button" onClick={() => setConfirming(false)}>Keep it</button>
      </>) : (<button type="button" onClick={() => setConfirming(true)}>Delete…</button>)}
    </div>
  </section>);
}

function CreateForm({ reload }: { reload: () => void }) {
  const [kind, setKind] = useState<'cron' | 'interval'>('cron');
  const create = async (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const f = new FormData(form);
    const text = (n: string) => {
      const v = f.get(n);
      return typeof v === 'string' ? v.trim() : '';
    };
    const budget = text('monthlyBudgetUsd');
    const body = {
      goal: text('goal'),
      ...(text('id') ? { id: text('id') } : {}),
      when: kind === 'cron' ? { kind, cron: text('cron') } : { kind, every: text('every') },
      timeZone: text('timeZone') || 'UTC',
      overlap: text('overlap'),
      ...(budget ? { monthlyBudgetUsd: Number(budget) } : {}),
      mode: text('mode'),
      ...(text('workspace') ? { workspace: text('workspace') } : {}),
      ...(f.get('createWorkspace') ? { createWorkspace: true } : {}),
      ...(f.get('autoApprove') ? { autoApprove: true } : {}),
      ...(f.get('paused') ? { paused: true } : {}),
    };
    try {
      const r = await api<{ id: string }>('POST', '/api/schedules', body);
      say(`schedule ${r.id} created`);
      form.reset();
      reload();
    } catch (err) {
      if (!(err instanceof Refused)) say(err instanceof Error ? err.message : String(err), true);
    }
  };
  return (<form class="card" aria-labelledby="new-schedule-title" onSubmit={(e: Event) => void create(e)}>
    <h3 id="new-schedule-title">New schedule</h3>
    <label for="sch-goal">What each run is to achieve</label>
    <textarea id="sch-goal" name="goal" rows={2} required></textarea>
    <label for="sch-id">Id (default: schedule-…)</label>
    <input id="sch-id" name="id" type="text" />
    <fieldset>
      <legend>When</legend>
      <label class="inline"><input type="radio" name="kind" value="cron" checked={kind === 'cron'} onChange={() => setKind('cron')} />cron</label>
      <label class="inline"><input type="radio" name="kind" value="interval" checked={kind === 'interval'} onChange={() => setKind('interval')} />interval</label>
      {kind === 'cron' ? (<><label for="sch-cron">Cron (minute hour day-of-month month day-of-week)</label><input id="sch-cron" name="cron" type="text" placeholder="0 7 * * 1-5" required /></>) : (<><label for="sch-every">Every (e.g. 30s, 15m, 1h)</label><input id="sch-every" name="every" type="text" placeholder="1h" required /></>)}
    </fieldset>
    <label for="sch-tz">Time zone</label>
    <input id="sch-tz" name="timeZone" type="text" placeholder="UTC" />
    <label for="sch-overlap">When a run is due while the last still runs</label>
    <select id="sch-overlap" name="overlap">{OVERLAPS.map((o) => (<option value={o}>{o.replace('_', ' ')}</option>))}</select>
    <label for="sch-budget">Monthly budget (USD, across the runs; empty: none)</label>
    <input id="sch-budget" name="monthlyBudgetUsd" type="number" min="0.01" step="0.01" />
    <label for="sch-workspace">Workspace (a folder inside the server’s; default: the server’s)</label>
    <input id="sch-workspace" name="workspace" type="text" />
    <div class="actions"><label class="inline"><input type="checkbox" name="createWorkspace" />create the workspace if it does not exist</label></div>
    <label for="sch-mode">Tool policy</label>
    <select id="sch-mode" name="mode">{MODES.map((m) => (<option value={m}>{m}</option>))}</select>
    <div class="actions"><label class="inline"><input type="checkbox" name="autoApprove" />runs start without plan approval</label></div>
    <div class="actions"><label class="inline"><input type="checkbox" name="paused" />create paused</label></div>
    <div class="actions"><button class="primary">Create schedule</button></div>
  </form>);
}

export function SchedulesPage() {
  const [items, setItems] = useState<ScheduleDetails[] | null>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let stopped = false;
    const load = async () => {
      try {
        const r = await api<{ items: ScheduleDetails[] }>('GET', '/api/schedules');
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
  }, [tick]);
  const reload = () => setTick((t) => t + 1);
  return (<div>
    <h2>Schedules</h2>
    {items === null ? (<p>Loading…</p>) : items.length === 0 ? (<p>No schedules.</p>) : null}
    {(items ?? []).map((s) => (<ScheduleCard key={s.id} s={s} reload={reload} />))}
    <CreateForm reload={reload} />
  </div>);
}
