// A session's turns with their workspace checkpoints (docs/fork-and-rewind.md): "Fork here"
// starts a new session from that turn and opens it; "Rewind here" asks first, then takes
// this session back to the turn (later turns set aside, files restored). A diff of files
// between two turns, and the lineage: whose fork this is, at which turn, and its forks.
// Shown only for a session started with checkpoints.
import { useState } from 'preact/hooks';
import { act, api, enc, Refused, say } from './api';
import { useRefreshed } from './pages/goal';
import { dateTime } from './ui';
import type { CheckpointsView, TurnsDiff } from './types';

// The route's answer: the session's checkpoints query and its forks (server/checkpoint-routes.ts).
type CheckpointsData = CheckpointsView & { forks: { id: string; turn: number; status: string | null }[] };
type Diff = TurnsDiff;

const sessionLink = (id: string) => `#/session/${enc(id)}`;

export function TurnCheckpoints({ id, version }: { id: string; version: number }) {
  const data = useRefreshed<CheckpointsData>(`/api/sessions/${enc(id)}/checkpoints`, version);
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [diff, setDiff] = useState<Diff | null>(null);
  if (!data?.enabled) return null;
  const kept = data.turns.filter((t) => t.manifest !== null);
  const fork = async (turn: number) => {
    try {
      say(`fork ${id} at turn ${turn}…`);
      const made = await api<{ id: string }>('POST', `/api/sessions/${enc(id)}/fork`, { atTurn: turn });
      say(`fork ${id} at turn ${turn}: ${made.id}`);
      location.hash = sessionLink(made.id);
    } catch (e) {
      if (!(e instanceof Refused)) say(`fork at turn ${turn}: ${e instanceof Error ? e.message : String(e)}`, true);
    }
  };
  const rewind = (turn: number) => {
    const later = data.turns.filter((t) => t.turn > turn).length;
    if (!confirm(`Rewind ${id} to turn ${turn}? The ${later} later turn(s) are set aside (kept, forkable) and the files are restored as they were at turn ${turn}.`)) return;
    void act(`rewind ${id} to turn ${turn}`, `/api/sessions/${enc(id)}/rewind`, { toTurn: turn, files: true });
  };
  const showDiff = async (e: Event) => {
    e.preventDefault();
    try {
      setDiff(await api<Diff>('GET', `/api/sessions/${enc(id)}/diff?from=${enc(from)}&to=${enc(to)}`));
    } catch (err) {
      if (!(err instanceof Refused)) say(`diff: ${err instanceof Error ? err.message : String(err)}`, true);
    }
  };
  return (<section class="card checkpoints" aria-labelledby="checkpoints-title">
    <h3 id="checkpoints-title">Turns and checkpoints</h3>
    <p class="lineage">
      {data.forkOf ? (<span>Forked from <a href={sessionLink(data.forkOf.sessionId)}>{data.forkOf.sessionId}</a> at turn {data.forkOf.turn}. </span>) : null}
      {data.forks.length > 0
        ? (<span>Its forks: {data.forks.map((f, i) => (<span key={f.id}>{i > 0 ? ', ' : ''}<a href={sessionLink(f.id)}>{f.id}</a> (turn {f.turn})</span>))}.</span>)
        : (<span class="muted">No forks.</span>)}
    </p>
    <table>
      <caption class="visually-hidden">Each turn's checkpoint, with fork and rewind</caption>
      <thead><tr><th scope="col">turn</th><th scope="col">at</th><th scope="col">files</th><th scope="col">actions</th></tr></thead>
      <tbody>
        {data.turns.map((t) => (<tr key={t.id} data-turn={t.turn}>
          <th scope="row">{t.turn}</th>
          <td>{dateTime(t.at)}</td>
          <td>{t.manifest === null
            ? (<span class="muted">no checkpoint{t.error ? `: ${t.error}` : ''}</span>)
            : `${t.changed} changed, ${t.removed} removed${t.skipped.length > 0 ? `, ${t.skipped.length} not kept` : ''}${t.incomplete ? ' (incomplete)' : ''}`}
            {t.skipped.length > 0 ? (<details><summary>not kept</summary><ul>{t.skipped.map((x) => (<li key={x.path}>{x.reason}</li>))}</ul></details>) : null}</td>
          <td>{t.manifest !== null
            ? [(<button type="button" key="f" onClick={() => void fork(t.turn)} aria-label={`Fork here: turn ${t.turn}`}>Fork here</button>),
                (<button type="button" key="r" class="danger" disabled={t.turn === data.turns.at(-1)?.turn} onClick={() => rewind(t.turn)} aria-label={`Rewind here: turn ${t.turn}`}>Rewind here</button>)]
            : null}</td>
        </tr>))}
      </tbody>
    </table>
    {data.rewound.length > 0 ? (<p class="muted">Set aside by rewinds: {data.rewound.map((r) => `${r.checkpoints.length} turn(s) after turn ${r.toTurn} (${r.by})`).join('; ')}.</p>) : null}
    {kept.length > 1 ? (<form class="actions" aria-label="diff between two turns" onSubmit={(e: Event) => void showDiff(e)}>
        <label class="inline" for="diff-from">Files from turn</label>
        <select id="diff-from" value={from} onChange={(e: Event) => setFrom((e.target as HTMLSelectElement).value)} required>
          <option value="">—</option>{kept.map((t) => (<option key={t.id} value={String(t.turn)}>{t.turn}</option>))}
        </select>
        <label class="inline" for="diff-to">to turn</label>
        <select id="diff-to" value={to} onChange={(e: Event) => setTo((e.target as HTMLSelectElement).value)} required>
          <option value="">—</option>{kept.map((t) => (<option key={t.id} value={String(t.turn)}>{t.turn}</option>))}
        </select>
        <button>Diff</button>
      </form>) : null}
    {diff ? (<pre class="diff" aria-label={`files changed from turn ${from} to turn ${to}`}>{[...diff.added.map((p) => `A ${p}`), ...diff.removed.map((p) => `D ${p}`), ...diff.changed.map((p) => `M ${p}`)].join('\n') || 'no files changed'}</pre>) : null}
  </section>);
}
