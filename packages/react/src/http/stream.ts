// Following a workflow's event stream (GET /api/workflows/{id}/events, SSE). EventSource
// cannot send the Authorization header, so this is fetch + eventsource-parser (the SSE grammar
// done by a library, not by hand). On a dropped connection it reconnects with Last-Event-ID:
// every item carries its stream offset, before and after the workflow ends, so nothing is
// lost or repeated. Shared by the console and the React hooks.
import { EventSourceParserStream } from 'eventsource-parser/stream';
import type { StreamItem } from './run-state';

export interface Follow {
  stop(): void;
}

export interface FollowOptions {
  /** The server's origin ('' for the page's own). */
  baseUrl?: string;
  /** The bearer token, read at each (re)connect. */
  token: () => string | null;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
}

export function followRun(id: string, options: FollowOptions, onItem: (item: StreamItem) => void, onEnd: () => void): Follow {
  const abort = new AbortController();
  const doFetch = options.fetch ?? ((...a: Parameters<typeof fetch>) => fetch(...a));
  let lastId: string | null = null;
  void (async () => {
    for (let attempt = 0; !abort.signal.aborted; attempt++) {
      try {
        const res = await doFetch(`${options.baseUrl ?? ''}/api/workflows/${encodeURIComponent(id)}/events`, {
          headers: { Authorization: `Bearer ${options.token() ?? ''}`, Accept: 'text/event-stream', ...(lastId !== null ? { 'Last-Event-ID': lastId } : {}) },
          signal: abort.signal,
          credentials: 'omit',
        });
        if (!res.ok || !res.body) throw new Error(`stream: ${res.status}`);
        const reader = res.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          if (value.event === 'end') return onEnd();
          if (value.event !== 'events' && value.event !== 'model') continue;
          if (value.id) lastId = value.id;
          attempt = 0;
          onItem({ topic: value.event, offset: value.id ? Number(value.id) : -1, data: JSON.parse(value.data) as Record<string, unknown> });
        }
      } catch {
        if (abort.signal.aborted) return;
      }
      await new Promise((r) => setTimeout(r, Math.min(5000, 300 * 2 ** attempt)));
    }
  })();
  return { stop: () => abort.abort() };
}
