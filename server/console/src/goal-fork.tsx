// A goal's fork points (docs/fork-and-rewind.md "Goals"): its plan versions and finished tasks,
// each with "Fork from here" — a new goal from that point, with the plan then or a changed one
// (pasted as JSON: the tasks a planner would propose), the tasks done by then kept, the others
// run again, the files laid out in a new workspace — and the lineage (whose fork this is, and
// what it kept). Shown only for a goal started with checkpoints.
import { useState } from 'preact/hooks';
import { api, enc, Refused, say } from './api';
import { useRefreshed } from './pages/goal';
import { dateTime } from './ui';
import type { GoalCheckpointsView } from '../../../workflows/protocol/goal-fork';

const goalLink = (id: string) => `#/goal/${enc(id)}`;
const pointText = (p: { atPlanVersion: number } | { afterTask: string }) => ('atPlanVersion' in p ? `plan version ${p.atPlanVersion}` : `task ${p.afterTask}`);

export function GoalForkPoints({ id, version }: { id: string; version: number }) {
  const data = useRefreshed<GoalCheckpointsView>(`/api/goals/${enc(id)}/checkpoints`, version);
  const [planText, setPlanText] = useState('');
  if (!data?.enabled) return null;
  const fork = async (point: { atPlanVersion: number } | { afterTask: string }) => {
    const label = `fork ${id} from ${pointText(point)}`;
    let plan: unknown;
    try {
      plan = planText.trim() === '' ? undefined : JSON.parse(planText);
    } catch (e) {
      return say(`${label}: the changed plan is not JSON: ${e instanceof Error ? e.message : String(e)}`, true);
    }
    try {
      say(`${label}…`);
      const made = await api<{ id: string }>('POST', `/api/goals/${enc(id)}/fork`, { ...point, ...(plan !== undefined ? { plan } : {}) });
      say(`${label}: ${made.id}`);
      location.hash = goalLink(made.id);
    } catch (e) {
      if (!(e instanceof Refused)) say(`${label}: ${e instanceof Error ? e.message : String(e)}`, true);
    }
  };
  const forkButton = (point: { atPlanVersion: number } | { afterTask: string }, ok: boolean) => (
    <button type="button" disabled={!ok} onClick={() => void fork(point)} aria-label={`Fork from here: ${pointText(point)}`}>Fork from here</button>
  );
  // The last attempt of each task that ended (a task is a fork point once it has finished).
  const ends = [...new Map(data.finished.map((f) => [f.taskId, f] as const)).values()].sort((a, b) => a.seq - b.seq);
  return (<section class="card goal-forks" aria-labelledby="goal-forks-title">
    <h3 id="goal-forks-title">Fork points</h3>
    {data.forkOf
      ? (<p class="lineage">Forked from <a href={goalLink(data.forkOf.goalId)}>{data.forkOf.goalId}</a> at {pointText(data.forkOf.point)}; kept: {data.forkOf.kept.join(', ') || 'none'}.</p>)
      : null}
    <table>
      <caption class="visually-hidden">Plan versions and finished tasks, each a point to fork from</caption>
      <thead><tr><th scope="col">point</th><th scope="col">at</th><th scope="col">workspace</th><th scope="col">fork</th></tr></thead>
      <tbody>
        {data.planVersions.map((v) => (<tr key={`v${v.version}`} data-plan-version={v.version}>
          <th scope="row">plan v{v.version} <span class="muted">({v.tasks.length} tasks, {v.tasks.filter((t) => t.status === 'succeeded').length} done)</span></th>
          <td>{dateTime(v.at)}</td>
          <td>{v.manifest === null ? (<span class="muted">no checkpoint{v.error ? `: ${v.error}` : ''}</span>) : 'recorded'}</td>
          <td>{forkButton({ atPlanVersion: v.version }, v.manifest !== null)}</td>
        </tr>))}
        {ends.map((f) => (<tr key={`t${f.taskId}`} data-task={f.taskId}>
          <th scope="row">after task {f.taskId} <span class="muted">(attempt {f.attempt}, {f.outcome})</span></th>
          <td>{dateTime(f.at)}</td>
          <td>{f.manifest === null ? (<span class="muted">no checkpoint{f.error ? `: ${f.error}` : ''}</span>) : `${f.changed} changed, ${f.removed} removed${f.skipped.length > 0 ? `, ${f.skipped.length} not kept` : ''}`}</td>
          <td>{forkButton({ afterTask: f.taskId }, f.manifest !== null)}</td>
        </tr>))}
      </tbody>
    </table>
    <details>
      <summary>Fork with a changed plan</summary>
      <label for="goal-fork-plan">The fork's plan (JSON: every task, as a planner proposes them; empty: the plan at that point). Tasks done by then that it names unchanged are kept.</label>
      <textarea id="goal-fork-plan" rows={6} value={planText} onInput={(e: Event) => setPlanText((e.target as HTMLTextAreaElement).value)} />
    </details>
  </section>);
}
