// A run at a glance from its stream: how many steps it took (model calls and tool calls) and
// how long it has run (first event to last, or to now while it runs). Cost comes from the
// workflow's usage view (a session's or goal's state; a task agent's in its goal's), which
// prices what the stream does not carry.
import type { RunStream } from './run-state';

export interface RunGlance {
  modelCalls: number;
  toolCalls: number;
  /** Milliseconds from the first event to the last (ended) or to `now` (running); null before any event. */
  elapsedMs: number | null;
}

export function glanceOf(run: Pick<RunStream, 'events' | 'calls' | 'ended'>, now: number = Date.now()): RunGlance {
  const times = run.events.map((e) => (typeof e.at === 'string' ? Date.parse(e.at) : NaN)).filter((t) => !Number.isNaN(t));
  const first = times.length ? Math.min(...times) : null;
  const last = times.length ? Math.max(...times) : null;
  return {
    modelCalls: new Set(run.calls.map((c) => c.callId ?? c.key)).size,
    toolCalls: run.events.filter((e) => e.kind === 'tool.result').length,
    elapsedMs: first === null ? null : Math.max(0, (run.ended ? last! : Math.max(now, last!)) - first),
  };
}

/** `1h 02m`, `3m 07s`, `12.4s`, `850ms`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.floor(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}
