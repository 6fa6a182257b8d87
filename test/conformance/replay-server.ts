// A plain HTTP server that answers POST /v1/messages with recorded-shape responses, in
// order: an SSE transcript byte for byte, a JSON message, or an error status. It knows
// nothing of scenarios, matching or Keel — unlike the stand-in (standin/), which is
// Keel's own model of the API and could share Keel's misunderstandings. Every request
// body is kept so a test can assert what Keel sent next.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const TRANSCRIPTS = path.join(path.dirname(fileURLToPath(import.meta.url)), 'transcripts');

export type Recorded =
  /** A transcript file in transcripts/ (`.sse`), sent as it is. */
  | { sse: string }
  /** A JSON file in transcripts/, for non-streamed calls (the compaction summary). */
  | { json: string }
  | { status: number; type: string; message: string };

export interface ReplayServer {
  url: string;
  /** Request bodies, in arrival order. */
  readonly bodies: Record<string, unknown>[];
  close(): Promise<void>;
}

export async function startReplayServer(script: readonly Recorded[]): Promise<ReplayServer> {
  const queue = [...script];
  const bodies: Record<string, unknown>[] = [];
  let n = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const requestId = `req_011CReplay${String(++n).padStart(4, '0')}`;
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
      bodies.push(body);
      const next = queue.shift();
      if (req.method !== 'POST' || req.url?.split('?')[0] !== '/v1/messages' || next === undefined) {
        res.writeHead(500, { 'content-type': 'application/json', 'request-id': requestId, 'x-should-retry': 'false' });
        res.end(JSON.stringify({ type: 'error', error: { type: 'api_error', message: `replay server: nothing recorded for request ${n} (${req.method} ${req.url})` }, request_id: requestId }));
        return;
      }
      if ('sse' in next) {
        res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'request-id': requestId });
        res.end(readFileSync(path.join(TRANSCRIPTS, next.sse)));
      } else if ('json' in next) {
        res.writeHead(200, { 'content-type': 'application/json', 'request-id': requestId });
        res.end(readFileSync(path.join(TRANSCRIPTS, next.json)));
      } else {
        res.writeHead(next.status, { 'content-type': 'application/json', 'request-id': requestId });
        res.end(JSON.stringify({ type: 'error', error: { type: next.type, message: next.message }, request_id: requestId }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    bodies,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The stop reasons the transcripts end with (from their message_delta events). */
export function stopReasonsIn(files: readonly string[]): Set<string> {
  const reasons = new Set<string>();
  for (const file of files) {
    for (const match of readFileSync(path.join(TRANSCRIPTS, file), 'utf8').matchAll(/"stop_reason":"([a-z_]+)"/g)) reasons.add(match[1]!);
  }
  return reasons;
}

/** The union members of `export type StopReason = …` in the installed SDK's declarations. */
export function sdkStopReasons(): string[] {
  const entry = createRequire(import.meta.url).resolve('@anthropic-ai/sdk');
  const dts = path.join(path.dirname(entry), 'resources', 'messages', 'messages.d.ts');
  const source = readFileSync(dts, 'utf8');
  const declaration = /export type StopReason\s*=\s*([^;]+);/.exec(source);
  if (!declaration) throw new Error(`no StopReason type in ${dts}`);
  return [...declaration[1]!.matchAll(/'([^']+)'/g)].map((m) => m[1]!);
}
