// Following a workflow's event stream. EventSource cannot send the Authorization header, so
// this is fetch + eventsource-parser (the SSE grammar done by a library, not by hand). On a
// dropped connection it reconnects with Last-Event-ID: every item carries its stream offset,
// before and after the workflow ends, so nothing is lost or repeated.
import { EventSourceParserStream } from 'eventsource-parser/stream';
import { token } from './api';
import type { StreamItem } from './run-state';

export type { StreamItem } from './run-state';

export interface Follow {
  stop(): void;
}

export function follow(id: string, onItem: (item: StreamItem) => void, onEnd: () => void): Follow {
  const abort = new AbortController();
  let lastId: string | null = null;
  void (async () => {
    for (let attempt = 0; !abort.signal.aborted; attempt++) {
      try {
        const res = await fetch(`/api/workflows/${encodeURIComponent(id)}/events`, {
          headers: { Authorization: `Bearer ${token() ?? ''}`, Accept: 'text/event-stream', ...(lastId !== null ? { 'Last-Event-ID': lastId } : {}) },
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
