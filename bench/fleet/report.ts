// The fleet run's report: the JSON as measured, and a Markdown page with the outcome table
// and one row per fault (when it struck, how long its service was away, how long the fleet
// took to recover after it came back: a canary turn done on every host it touched).
import type { FleetOptions, FleetResult } from './run';

const s = (ms: number | null) => (ms === null ? '—' : `${(ms / 1000).toFixed(1)} s`);

export function fleetMarkdown(command: string, o: Omit<FleetOptions, 'cli' | 'log' | 'signal'>, r: FleetResult, at: string): string {
  const g = r.goals;
  const ss = r.sessions;
  const lines = [
    `# Fleet run, seed ${r.seed}: ${r.pass ? 'PASS' : 'FAIL'}`,
    '',
    `\`${command}\` at ${at}, ${(r.durationMs / 1000).toFixed(0)} s in all. ${r.workers} workers (own workspace roots and hosts), one PostgreSQL store, the Temporal dev server on a database file, the stand-in; ` +
      `fault window ${s(o.windowMs)}, quiet horizon ${s(o.quietMs)}.`,
    '',
    '| measure | value |',
    '|---|---|',
    `| goals met | ${g.met} of ${g.total} |`,
    `| goals stopped / failed / stuck / needed a human | ${g.stopped.length} / ${g.failed.length} / ${g.stuck.length} / ${g.needsHuman.length} |`,
    `| sessions with every turn answered | ${ss.allAnswered} of ${ss.total} (${ss.turnsAnswered} of ${ss.turnsExpected} turns) |`,
    `| sessions failed / stuck / needed a human | ${ss.failed.length} / ${ss.stuck.length} / ${ss.needsHuman.length} |`,
    `| messages sent / lost | ${r.messages.sent} / ${r.messages.lost.length} |`,
    `| approvals by SDK / HTTP / signal (asked again) | ${r.approvals.sdk} / ${r.approvals.http} / ${r.approvals.signal} (${r.approvals.retried}) |`,
    `| side effects logged / run twice / missing | ${r.sideEffects.commandsLogged} / ${r.sideEffects.twice.length} / ${r.sideEffects.missing.length} |`,
    `| task tool calls without exactly one result | ${r.sideEffects.toolCallsWithoutOneResult.length} |`,
    `| workflow task failures / time-outs (histories read) | ${r.workflowTaskFailures.total} / ${r.workflowTaskFailures.timedOut} (${r.workflowTaskFailures.histories})${Object.keys(r.workflowTaskFailures.byCause).length ? `: ${Object.entries(r.workflowTaskFailures.byCause).map(([k, v]) => `${k} ×${v}`).join(', ')}` : ''} |`,
    `| runs the SDK could not replay: reset by the workers / left to a human | ${r.replayRepairs?.reset.length ?? 0} / ${r.replayRepairs?.left.length ?? 0} |`,
    `| workers that exited by themselves (started again) | ${r.workerExits.length} |`,
    `| runs that waited for a service | ${Object.entries(r.waited).map(([k, v]) => `${k} ×${v}`).join(', ') || 'none'} |`,
    '',
    '| # | fault | host(s) struck or measured | at | away | recovered after back |',
    '|---:|---|---|---:|---:|---:|',
    ...r.faults.map((f) => `| ${f.id} | ${f.kind} | ${f.hosts.length === 1 ? f.hosts[0] : f.kind.startsWith('worker') ? `worker ${f.worker}` : 'all'} | ${s(f.struckMs)} | ${f.struckMs !== null && f.backMs !== null ? s(f.backMs - f.struckMs) : '—'} | ${s(f.recoveredMs)}${f.note ? ` (${f.note})` : ''} |`),
    '',
  ];
  const perKind = new Map<string, number[]>();
  for (const f of r.faults) if (f.recoveredMs !== null) perKind.set(f.kind, [...(perKind.get(f.kind) ?? []), f.recoveredMs]);
  lines.push('| fault kind | count | recovery median | max |', '|---|---:|---:|---:|');
  for (const [kind, v] of perKind) {
    const sorted = [...v].sort((a, b) => a - b);
    lines.push(`| ${kind} | ${v.length} | ${s(sorted[Math.floor(sorted.length / 2)]!)} | ${s(sorted.at(-1)!)} |`);
  }
  lines.push('');
  if (r.failedChecks.length) lines.push('## Failed checks', '', ...r.failedChecks.map((c) => `- ${c}`), '');
  const detail = [...r.workerExits, ...g.stopped, ...g.failed, ...g.stuck, ...g.needsHuman, ...ss.failed, ...ss.stuck, ...ss.needsHuman, ...r.messages.lost, ...r.sideEffects.twice, ...r.sideEffects.missing, ...r.sideEffects.toolCallsWithoutOneResult];
  if (detail.length) lines.push('## Details', '', ...detail.slice(0, 100).map((d) => `- ${d.replace(/\n/g, ' ')}`), '');
  return lines.join('\n');
}
