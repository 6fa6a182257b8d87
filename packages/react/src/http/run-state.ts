// What a run's page knows from its stream, as a pure reducer: the event log, the model calls
// (text and thinking per call) and the one being streamed now. Shared by the console
// (server/console/src) and the React hooks (../hooks.ts); kept apart from both so a unit test
// can replay a stream through it.

/** One item of a workflow's stream (stream.ts reads them). */
export interface StreamItem {
  topic: 'events' | 'model';
  offset: number;
  data: Record<string, unknown>;
}

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
  /** How many events of the run came before this call started: where it goes among them (run-conversation.ts). */
  order?: number;
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

/** Events after which no call of the turn streams any more. */
const ENDS_A_CALL = new Set(['turn.interrupted', 'turn.error', 'turn.completed', 'turn.refused', 'turn.truncated', 'session.turn_finished', 'llm.failed']);
const CUTS_A_CALL = new Set(['turn.interrupted', 'turn.error', 'llm.failed']);

export function emptyRun(): RunStream {
  return { events: [], calls: [], live: null, ended: false, version: 0 };
}

/** Applies one stream item; `byKey` holds the newest call per call id. */
export function applyRunItem(s: RunStream, byKey: Map<string, ModelCall>, item: StreamItem): void {
  if (item.topic === 'events') {
    const e = item.data as LogEntry;
    s.events = [...s.events, e];
    s.version++;
    // An interrupt or an error ends every call still shown as streaming, not only the live one.
    if (ENDS_A_CALL.has(e.kind)) {
      for (const call of s.calls) if (call.state === 'streaming') call.state = CUTS_A_CALL.has(e.kind) ? 'cut' : 'done';
      s.calls = [...s.calls];
      s.live = null;
    }
    return;
  }
  const m = item.data as { kind: string; callId: string | null; attempt: number; block?: string; text?: string; model?: string };
  const key = `${m.callId ?? 'model'}`;
  let call = byKey.get(key);
  // A retry voids what the earlier attempt showed. Text read live comes before its call's
  // start and retry markers (client/live-model.ts): a marker of the attempt shown goes on with it.
  if (!call || call.attempt !== m.attempt || ((m.kind === 'start' || m.kind === 'retry') && call.state !== 'streaming')) {
    call = { key: `${key}#${m.attempt}`, callId: m.callId, attempt: m.attempt, model: m.model ?? call?.model ?? null, text: '', thinking: '', state: 'streaming', order: s.events.length };
    if (byKey.has(key)) s.calls = s.calls.filter((c) => c !== byKey.get(key));
    byKey.set(key, call);
    s.calls = [...s.calls, call];
  }
  if (m.kind === 'start' && m.model) call.model = m.model;
  if (m.kind === 'delta' && m.block === 'thinking') call.thinking += m.text ?? '';
  else if (m.kind === 'delta') call.text += m.text ?? '';
  if (m.kind === 'stop') call.state = 'done';
  // Text of a call that has ended (the stream's copy of a delta, or a delta the activity sent
  // as it was cancelled, after the turn's interrupt) adds to that call; it does not make it
  // live again, which left an interrupted reply "being written" for ever, reloads included.
  s.live = call.state === 'streaming' ? call : s.live === call ? null : s.live;
  s.calls = [...s.calls];
}

/** The workflow ended: nothing streams any more. */
export function endRun(s: RunStream): void {
  s.ended = true;
  for (const call of s.calls) if (call.state === 'streaming') call.state = 'done';
  s.live = null;
  s.version++;
}

/** The model's trouble in the newest turn, from the event log: retrying, or failed for good. */
export interface ModelTrouble {
  state: 'retrying' | 'failed';
  message: string;
}

/**
 * What a session's badge says about its model: the newest turn failed because the model could
 * not answer (no key, unreachable, refused the call), or its call is being retried. Without
 * this the badge said "active" while every message failed (a console with no API key).
 */
export function modelTrouble(events: readonly LogEntry[]): ModelTrouble | null {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i]!;
    if (e.kind === 'turn.error') return { state: 'failed', message: typeof e.message === 'string' ? e.message : '' };
    if (e.kind === 'turn.retry_scheduled') return { state: 'retrying', message: typeof e.error === 'string' ? e.error : '' };
    if (e.kind === 'turn.started' || e.kind === 'turn.completed' || e.kind === 'turn.interrupted' || e.kind === 'turn.refused' || e.kind === 'turn.truncated') return null;
  }
  return null;
}
