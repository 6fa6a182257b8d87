// A proxy in front of the model stand-in that fails a share of the requests the way the
// real API does: 429 with retry-after, 529 overloaded, 500, a stream cut mid-way, an
// error event inside the stream. Seeded, so a run can be repeated.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type FaultKind = '429' | '529' | '500' | 'cut' | 'stream_error';
const KINDS: FaultKind[] = ['429', '529', '500', 'cut', 'stream_error'];

export interface FaultProxy {
  url: string;
  counts: Record<FaultKind | 'passed', number>;
  close(): Promise<void>;
}

export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const errorBody = (type: string, message: string) => JSON.stringify({ type: 'error', error: { type, message } });

export async function startFaultProxy(target: string, rate: number, seed: number): Promise<FaultProxy> {
  // Two streams: whether a request fails, and how (one stream for both skewed the rate).
  const random = seededRandom(seed);
  const pick = seededRandom(seed ^ 0x5bd1e995);
  const counts: FaultProxy['counts'] = { '429': 0, '529': 0, '500': 0, cut: 0, stream_error: 0, passed: 0 };
  const upstream = new URL(target);
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const isMessages = req.method === 'POST' && (req.url ?? '').startsWith('/v1/messages') && !(req.url ?? '').includes('count_tokens');
      const kind = isMessages && random() < rate ? KINDS[Math.floor(pick() * KINDS.length)]! : null;
      counts[kind ?? 'passed']++;
      if (kind === '429') return void res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' }).end(errorBody('rate_limit_error', 'injected 429'));
      if (kind === '529') return void res.writeHead(529, { 'content-type': 'application/json' }).end(errorBody('overloaded_error', 'injected 529'));
      if (kind === '500') return void res.writeHead(500, { 'content-type': 'application/json' }).end(errorBody('api_error', 'injected 500'));
      const forward = http.request(
        { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: { ...req.headers, host: upstream.host } },
        (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          let sent = 0;
          res.on('error', () => undefined);
          up.on('data', (chunk: Buffer) => {
            // Chunks already read still arrive after a cut.
            if (res.destroyed || res.writableEnded) return;
            res.write(chunk);
            sent += chunk.length;
            if (kind === 'cut' && sent > 120) {
              up.destroy();
              res.destroy();
            } else if (kind === 'stream_error' && sent > 120) {
              up.destroy();
              res.end(`event: error\ndata: ${errorBody('overloaded_error', 'injected in-stream error')}\n\n`);
            }
          });
          up.on('end', () => {
            if (!res.destroyed && !res.writableEnded) res.end();
          });
          up.on('error', () => res.destroy());
        },
      );
      forward.on('error', () => res.destroy());
      forward.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    counts,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
