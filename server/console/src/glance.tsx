// A run's cost, steps and time at a glance, under a page's heading (sessions, goals, task
// agents): steps and time from its stream (packages/react/src/http/run-glance.ts), cost from
// the usage view the page already reads. Ticks once a second while the run goes on.
import { useEffect, useState } from 'preact/hooks';
import { formatDuration, glanceOf } from '../../../packages/react/src/http/run-glance';
import type { RunStream } from './run-state';
import { usd } from './ui';

export function AtAGlance({ run, costUsd, unpricedCalls = 0 }: { run: RunStream; costUsd: number | null; unpricedCalls?: number }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    if (run.ended) return;
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, [run.ended]);
  const g = glanceOf(run, now);
  return (<dl class="glance" aria-label="at a glance">
    <div><dt>cost</dt><dd data-glance="cost">{usd(costUsd)}{unpricedCalls ? ` + ${unpricedCalls} unpriced` : ''}</dd></div>
    <div><dt>steps</dt><dd data-glance="steps">{g.modelCalls} model {g.modelCalls === 1 ? 'call' : 'calls'} · {g.toolCalls} tool {g.toolCalls === 1 ? 'call' : 'calls'}</dd></div>
    <div><dt>time</dt><dd data-glance="time">{g.elapsedMs === null ? '—' : formatDuration(g.elapsedMs)}{run.ended ? '' : ' so far'}</dd></div>
  </dl>);
}

/** How long a listed run took (start to close), or has run so far. */
export function listDuration(startTime: string, closeTime: string | null, now: number = Date.now()): string {
  const start = Date.parse(startTime);
  const end = closeTime ? Date.parse(closeTime) : now;
  return Number.isNaN(start) || Number.isNaN(end) ? '' : `${formatDuration(Math.max(0, end - start))}${closeTime ? '' : ' so far'}`;
}
