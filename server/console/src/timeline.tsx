// A run you can read: every event of a workflow's stream with its time, actor and payload
// (expandable), and the model's text and thinking per call, kept after the run ends (the
// stream is read from its start; a closed workflow serves it by query, with offsets).
import { useEffect, useRef, useState } from 'preact/hooks';
import { applyRunItem, emptyRun, endRun, type LogEntry, type ModelCall, type RunStream } from './run-state';
import { follow } from './stream';
import { time } from './ui';

export type { LogEntry, ModelCall, RunStream } from './run-state';

/** Follows a workflow's stream from its start; renders at most once a frame. */
export function useRunStream(id: string): RunStream {
  const acc = useRef<RunStream>(emptyRun());
  const [, setTick] = useState(0);
  useEffect(() => {
    acc.current = emptyRun();
    const byKey = new Map<string, ModelCall>();
    let frame = 0;
    const schedule = () => {
      if (!frame) frame = requestAnimationFrame(() => ((frame = 0), setTick((t) => t + 1)));
    };
    const f = follow(
      id,
      (item) => {
        applyRunItem(acc.current, byKey, item);
        schedule();
      },
      () => {
        endRun(acc.current);
        schedule();
      },
    );
    return () => {
      f.stop();
      cancelAnimationFrame(frame);
    };
  }, [id]);
  return acc.current;
}

const SKIP = new Set(['kind', 'seq', 'at', 'goalId', 'sessionId', 'agentId']);

/** Who did it: the approver, the task's agent, or the workflow itself. */
export function actorOf(e: LogEntry): string {
  if (typeof e.approver === 'string') return e.approver;
  if (e.by === 'human' || e.by === 'auto') return e.by === 'human' ? 'a human' : 'auto';
  if (typeof e.taskId === 'string') return `task ${e.taskId}`;
  const [area] = e.kind.split('.');
  return area === 'plan' || area === 'goal' ? 'goal' : area === 'session' ? 'session' : area === 'tool' ? 'tool' : area === 'llm' || area === 'turn' ? 'model' : (area ?? '');
}

/** One line of what matters in an event. */
function summaryOf(e: LogEntry): string {
  // A tool call stopped at a sandbox limit: its status and which limit, before anything else.
  if (e.kind === 'tool.result' && e.status === 'limit') {
    const facts = e.facts as { limit?: unknown } | undefined;
    return `limit: ${typeof facts?.limit === 'string' ? facts.limit : 'sandbox'}`;
  }
  for (const k of ['reason', 'error', 'message', 'summary', 'findings', 'toolName', 'outcome', 'input', 'result']) {
    const v = e[k];
    if (typeof v === 'string' && v) return v.length > 160 ? `${v.slice(0, 159)}…` : v;
  }
  return '';
}

export function Timeline({ events, id = 'events' }: { events: LogEntry[]; id?: string }) {
  const [all, setAll] = useState(false);
  const shown = all ? events : events.slice(-200);
  return (<div>
    {events.length > shown.length ? (<button type="button" onClick={() => setAll(true)}>Show all {events.length} events</button>) : null}
    <ol class="timeline" id={id} aria-label="events">
      {shown.map((e) => {
        const payload = Object.fromEntries(Object.entries(e).filter(([k]) => !SKIP.has(k)));
        const bad = /failed|error|stopped|denied|rejected|blocked|interrupted/.test(e.kind) || (e.kind === 'tool.result' && e.status !== 'success');
        return (<li key={e.seq} class={bad ? 'bad' : ''}>
          <details>
            <summary><time datetime={e.at}>{time(e.at)}</time> <span class="actor">{actorOf(e)}</span> <strong>{e.kind}</strong> <span class="muted">{summaryOf(e)}</span></summary>
            <pre>{JSON.stringify(payload, null, 2)}</pre>
          </details>
        </li>);
      })}
    </ol>
  </div>);
}

export function ModelText({ calls }: { calls: ModelCall[] }) {
  if (!calls.length) return (<p class="muted">No model text yet.</p>);
  return (<div class="model-calls" id="model-text">
    {calls.map(
      (c, i) => (<details key={c.key} class={`model-call ${c.state}`} open={i === calls.length - 1}>
        <summary>{c.model ?? 'model'} <span class="muted">{c.callId ?? ''}{c.attempt > 1 ? ` · attempt ${c.attempt}` : ''} · {c.state === 'streaming' ? 'streaming' : c.state === 'cut' ? 'interrupted' : 'done'}</span></summary>
        {c.thinking ? (<details class="thinking"><summary>thinking</summary><pre>{c.thinking}</pre></details>) : null}
        <pre class="stream">{c.text}</pre>
      </details>),
    )}
  </div>);
}
