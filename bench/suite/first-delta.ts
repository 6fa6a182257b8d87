// The `first-delta` scenario's three ways to a turn's first model delta, side by side (issue 53):
// - `sdk`: `SessionHandle.events` from the stream's offset, started with `send()`;
// - `sse`: `GET /api/workflows/{id}/events?from=` of `keel serve`, opened with the message's
//   `POST /api/sessions/{id}/messages` (a page that sends and follows);
// - `ag-ui`: `POST /api/sessions/{id}/ag-ui` with the thread's new user message, its SSE reply
//   read up to the first TEXT_MESSAGE_CONTENT.
// Each times, from the user's request (t0), the first text delta the reader receives; the
// scenario adds the time from the stand-in receiving the model request.
import { EventSourceParserStream, type EventSourceMessage } from 'eventsource-parser/stream';
import type { SessionHandle } from '../../client/session-handle';

export const DELTA_PATHS = ['sdk', 'sse', 'ag-ui'] as const;
export type DeltaPath = (typeof DELTA_PATHS)[number];

export interface HttpApi {
  url: string;
  token: string;
}

export interface PathTurn {
  /** performance.now() at the first delta. */
  firstDeltaAt: number;
  /** The turn's final text (checked by the scenario). */
  output: string;
}

/** How long one turn may take before the run says so (a loaded machine may take long). */
const TURN_LIMIT_MS = 120_000;

/**
 * One turn of `text` on `session` by `path`; t0 is taken by the caller just before. `from` is
 * the stream's offset before the message (what a page that follows already knows: its last
 * event id).
 */
export async function runPathTurn(path: DeltaPath, session: SessionHandle, api: HttpApi, text: string, messageId: string, from: number): Promise<PathTurn> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new Error(`${session.id}: ${path} turn over ${TURN_LIMIT_MS} ms`)), TURN_LIMIT_MS);
  try {
    switch (path) {
      case 'sdk': {
        const first = firstSdkDelta(session, from, abort.signal);
        const outcome = await session.send(text, { messageId });
        const firstDeltaAt = await first;
        return { firstDeltaAt, output: outcome.output ?? '' };
      }
      case 'sse': {
        const first = firstSseDelta(api, session.id, from, abort.signal);
        const posted = await fetch(`${api.url}/api/sessions/${session.id}/messages`, {
          method: 'POST',
          headers: { authorization: `Bearer ${api.token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ text, messageId }),
          signal: abort.signal,
        });
        if (!posted.ok) throw new Error(`${session.id}: POST messages answered ${posted.status}: ${await posted.text()}`);
        const firstDeltaAt = await first;
        const outcome = await session.turnOf(messageId);
        return { firstDeltaAt, output: outcome.output ?? '' };
      }
      case 'ag-ui': {
        const { firstDeltaAt, text: streamed } = await agUiRun(api, session.id, text, messageId, abort.signal);
        return { firstDeltaAt, output: streamed };
      }
    }
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}

async function firstSdkDelta(session: SessionHandle, from: number, signal: AbortSignal): Promise<number> {
  const reader = new AbortController();
  const stop = () => reader.abort();
  signal.addEventListener('abort', stop, { once: true });
  try {
    for await (const item of session.events({ from, topics: ['model'], signal: reader.signal })) {
      if (item.topic === 'model' && item.data.kind === 'delta' && item.data.text) return performance.now();
    }
  } finally {
    signal.removeEventListener('abort', stop);
    reader.abort();
  }
  throw new Error(`${session.id}: no model delta reached the SDK reader`);
}

/** The SSE events of a response, parsed (eventsource-parser, as the console's reader). */
async function* sseEvents(response: Response): AsyncGenerator<EventSourceMessage> {
  if (!response.ok || !response.body) throw new Error(`SSE answered ${response.status}: ${await response.text()}`);
  const reader = response.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader();
  try {
    for (;;) {
      const next = await reader.read();
      if (next.done) return;
      yield next.value;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

async function firstSseDelta(api: HttpApi, id: string, from: number, signal: AbortSignal): Promise<number> {
  const reader = new AbortController();
  const stop = () => reader.abort();
  signal.addEventListener('abort', stop, { once: true });
  try {
    const response = await fetch(`${api.url}/api/workflows/${id}/events?from=${from}`, { headers: { authorization: `Bearer ${api.token}`, accept: 'text/event-stream' }, signal: reader.signal });
    for await (const event of sseEvents(response)) {
      if (event.event !== 'model') continue;
      const data = JSON.parse(event.data) as { kind?: string; text?: string };
      if (data.kind === 'delta' && data.text) return performance.now();
    }
  } finally {
    signal.removeEventListener('abort', stop);
    reader.abort();
  }
  throw new Error(`${id}: no model delta reached the SSE reader`);
}

/** One AG-UI run of a new user message: when its first text came, and all its text. */
async function agUiRun(api: HttpApi, id: string, text: string, messageId: string, signal: AbortSignal): Promise<{ firstDeltaAt: number; text: string }> {
  const body = { threadId: id, runId: `run-${messageId}`, messages: [{ id: messageId, role: 'user', content: text }], tools: [], context: [], state: {}, forwardedProps: {} };
  const response = await fetch(`${api.url}/api/sessions/${id}/ag-ui`, {
    method: 'POST',
    headers: { authorization: `Bearer ${api.token}`, 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify(body),
    signal,
  });
  let firstDeltaAt = Number.NaN;
  let streamed = '';
  for await (const event of sseEvents(response)) {
    const data = JSON.parse(event.data) as { type: string; delta?: string; message?: string };
    if (data.type === 'TEXT_MESSAGE_CONTENT' && data.delta) {
      if (Number.isNaN(firstDeltaAt)) firstDeltaAt = performance.now();
      streamed += data.delta;
    }
    if (data.type === 'RUN_ERROR') throw new Error(`${id}: AG-UI run error: ${data.message ?? ''}`);
    if (data.type === 'RUN_FINISHED') break;
  }
  if (Number.isNaN(firstDeltaAt)) throw new Error(`${id}: no TEXT_MESSAGE_CONTENT in the AG-UI run`);
  return { firstDeltaAt, text: streamed };
}
