// A run you can read: every event of a workflow's stream with its time, actor and payload
// (expandable), and the model's text and thinking per call, kept after the run ends (the
// stream is read from its start; a closed workflow serves it by query, with offsets).
import { useEffect, useRef, useState } from 'preact/hooks';
import { follow, type StreamItem } from './stream';
import { time } from './ui';

export interface LogEntry {
  kind: string;
  seq: number;
  at?: string;
  [field: string]: unknown;
}

export interface ModelCall {
  key: string;
  callId: string | null;
  attempt: number;
  model: string | null;
  text: string;
  thinking: string;
  state: 'streaming' | 'done' | 'cut';
}

export interface RunStream {
  events: LogEntry[];
  calls: ModelCall[];
  /** The call being streamed now (null between calls). */
  live: ModelCall | null;
  ended: boolean;
  /** Bumped by each event (not each model delta): pages refresh their state on it. */
  version: number;
}

const ENDS_A_CALL = new Set(['turn.interrupted', 'turn.error', 'turn.completed', 'session.turn_finished', 'llm.failed']);

/** Follows a workflow's stream from its start; renders at most once a frame. */
export function useRunStream(id: string): RunStream {
  const acc = useRef<RunStream>({ events: [], calls: [], live: null, ended: false, version: 0 });
  const [, setTick] = useState(0);
  useEffect(() => {
    acc.current = { events: [], calls: [], live: null, ended: false, version: 0 };
    const byKey = new Map<string, ModelCall>();
    let frame = 0;
    const schedule = () => {
      if (!frame) frame = requestAnimationFrame(() => ((frame = 0), setTick((t) => t + 1)));
    };
    const onItem = (item: StreamItem) => {
      const s = acc.current;
      if (item.topic === 'events') {
        const e = item.data as LogEntry;
        s.events = [...s.events, e];
        s.version++;
        // An interrupt or an error ends the streamed bubble: it is no longer "streaming".
        if (ENDS_A_CALL.has(e.kind) && s.live) {
          s.live.state = e.kind === 'turn.interrupted' || e.kind === 'turn.error' ? 'cut' : 'done';
          s.live = null;
        }
      } else {
        const m = item.data as { kind: string; callId: string | null; attempt: number; block?: string; text?: string; model?: string };
        const key = `${m.callId ?? 'model'}`;
        let call = byKey.get(key);
        // A retry voids what the earlier attempt showed. Text read live comes before its call's
        // start and retry markers (client/live-model.ts): a marker of the attempt shown goes on with it.
        if (!call || call.attempt !== m.attempt || ((m.kind === 'start' || m.kind === 'retry') && call.state !== 'streaming')) {
          call = { key: `${key}#${m.attempt}`, callId: m.callId, attempt: m.attempt, model: m.model ?? call?.model ?? null, text: '', thinking: '', state: 'streaming' };
          if (byKey.has(key)) s.calls = s.calls.filter((c) => c !== byKey.get(key));
          byKey.set(key, call);
          s.calls = [...s.calls, call];
        }
        if (m.kind === 'start' && m.model) call.model = m.model;
        if (m.kind === 'delta' && m.block === 'thinking') call.thinking += m.text ?? '';
        else if (m.kind === 'delta') call.text += m.text ?? '';
        if (m.kind === 'stop') {
          call.state = 'done';
          if (s.live === call) s.live = null;
        } else s.live = call;
        s.calls = [...s.calls];
      }
      schedule();
    };
    const f = follow(id, onItem, () => {
      acc.current.ended = true;
      if (acc.current.live) acc.current.live.state = 'done';
      acc.current.live = null;
      acc.current.version++;
      schedule();
    });
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
