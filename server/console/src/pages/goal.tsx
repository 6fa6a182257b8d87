// A goal: status and why, the plan (graph and tasks: instructions, role, acceptance, usage,
// a link to each task's agent), what waits for you (with diffs), budget, reviews, the
// model's text and every event. Re-read on each event; keyed, so nothing typed is lost.
import { useEffect, useState } from 'preact/hooks';
import { act, api, enc, Refused, say } from '../api';
import { TaskDetails } from '../cards';
import { AtAGlance } from '../glance';
import { ModelText, Timeline, useRunStream } from '../timeline';
import type { GoalStateView, PlanView } from '../types';
import { Badge, BudgetBars, PlanGraph, UsageLine } from '../ui';
import { WaitingFor } from './inbox';
import { GoalForkPoints } from '../goal-fork';

type GoalData = { state: GoalStateView; plan: PlanView };

export function useRefreshed<T>(path: string | null, version: number): T | null {
  const [data, setData] = useState<T | null>(null);
  useEffect(() => {
    if (path === null) return;
    let stopped = false;
    // Many events arrive together: read once they settle.
    const timer = setTimeout(() => {
      api<T>('GET', path)
        .then((d) => !stopped && setData(d))
        .catch((e: unknown) => !(e instanceof Refused) && say(e instanceof Error ? e.message : String(e), true));
    }, version === 0 ? 0 : 150);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [path, version]);
  return data;
}

const ENDED = new Set(['goal_met', 'stopped']);

export function GoalPage({ id }: { id: string }) {
  const run = useRunStream(id);
  const data = useRefreshed<GoalData>(`/api/goals/${enc(id)}`, run.version);
  if (!data) return (<p class="muted">Loading {id}…</p>);
  const { state, plan } = data;
  const g = state.goal;
  const ended = ENDED.has(state.status);
  const failed = state.status === 'stopped' || state.status === 'blocked';
  return (<div id="goal">
    <h2>Goal <span class="muted id">{id}</span> <Badge status={state.status} /></h2>
    <AtAGlance run={run} costUsd={state.usage.usage.costUsd} unpricedCalls={state.usage.usage.unpricedCalls} />
    <p class="goal-text">{g.goal}</p>
    {ended || failed
      ? (<section class={`card report ${state.status === 'goal_met' ? '' : 'bad'}`} aria-labelledby="report-title">
          <h3 id="report-title">{state.status === 'goal_met' ? 'Goal met' : state.status === 'blocked' ? 'Blocked' : 'Goal stopped'}</h3>
          <p class="pre">{state.reason ?? (failed ? 'No reason was recorded.' : '')}</p>
        </section>)
      : null}
    <WaitingFor id={id} version={run.version} />
    <h3>Plan v{plan.planVersion}</h3>
    {plan.tasks.length ? (<PlanGraph tasks={plan.tasks} />) : (<p class="muted">No plan yet.</p>)}
    {plan.tasks.length
      ? (<table aria-label="tasks">
          <thead><tr>{['Task', 'State', 'Attempts', 'Evidence', 'Result', 'Usage'].map((c) => (<th scope="col">{c}</th>))}</tr></thead>
          <tbody>
            {plan.tasks.map((t) => {
              const ev = plan.evidence[t.id];
              return (<tr key={t.id}>
                <td>
                  <strong>{t.id}</strong><div class="muted">{t.title}</div>
                  {t.agentId ? (<a href={`#/agent/${enc(t.agentId)}`}>agent conversation</a>) : null}
                  <details><summary>instructions</summary><ul class="tasks"><TaskDetails task={t} /></ul></details>
                </td>
                <td><Badge status={t.status} /></td>
                <td>{t.attempts}/{t.attemptLimit}</td>
                <td>{ev
                  ? (<ul>{ev.filesChanged.map((f) => (<li>changed {f}</li>))}{ev.commands.map((c) => (<li>$ {c.command} → {c.refused ?? (c.limit !== undefined ? `limit: stopped at its ${c.limit} limit` : (c.exitCode ?? c.status))}</li>))}</ul>)
                  : t.evidence.length ? (<ul>{t.evidence.map((x) => (<li>{x}</li>))}</ul>) : ''}</td>
                <td class={t.status === 'failed' ? 'bad' : 'muted'}>{t.result ?? ''}</td>
                <td><UsageLine usage={t.agentId ? state.usage.agents[t.agentId] : undefined} /></td>
              </tr>);
            })}
          </tbody>
        </table>)
      : null}
    <GoalForkPoints id={id} version={run.version} />
    <h3>Budget</h3>
    <BudgetBars usage={state.usage.usage} limits={state.usage.limits} />
    {g.reviews?.length ? (<section><h3>Reviews</h3>{g.reviews.map((r) => (<div class="card"><strong>cycle {r.cycle}: {r.verdict}</strong><p>{r.findings}</p></div>))}</section>) : null}
    <h3>Model text</h3>
    <ModelText calls={run.calls} />
    <h3>Events</h3>
    <Timeline events={run.events} />
    {ended ? null : (<div class="actions"><button class="danger" onClick={() => void act(`cancel ${id}`, `/api/goals/${enc(id)}/cancel`, { reason: 'cancelled in the console' })}>Cancel goal</button></div>)}
  </div>);
}
