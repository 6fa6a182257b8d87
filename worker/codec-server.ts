// The codec server (`keel codec-server`): Temporal's remote-codec convention, so the Web UI
// and `temporal workflow show --codec-endpoint` can show payloads Keel encrypted. POST
// /encode and /decode take and return `{"payloads":[{"metadata":{k: base64}, "data": base64}]}`.
// Whoever reaches it can read every payload: it binds 127.0.0.1 unless told otherwise and,
// with KEEL_CODEC_TOKEN set, answers only requests that carry `Authorization: Bearer <token>`.
import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { z } from 'zod';

export interface CodecServerOptions {
  codec: PayloadCodec;
  /** Browser origins allowed to call it (the Web UI's), e.g. http://localhost:8233. */
  corsOrigins?: readonly string[];
  /** When set, requests must carry this bearer token. */
  token?: string;
}

const MAX_BODY_BYTES = 64 * 1024 * 1024;
const base64 = z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64');
const bodySchema = z.strictObject({
  payloads: z.array(z.object({ metadata: z.record(z.string(), base64).optional(), data: base64.optional() })),
});

const toPayload = (p: z.infer<typeof bodySchema>['payloads'][number]): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: Buffer.from(p.data ?? '', 'base64'),
});
const fromPayload = (p: Payload) => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? new Uint8Array()).toString('base64')])),
  data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
});

function tokenMatches(header: string | undefined, token: string): boolean {
  const given = Buffer.from(header?.replace(/^Bearer\s+/i, '') ?? '');
  const expected = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw Object.assign(new Error(`request body over ${MAX_BODY_BYTES} bytes`), { status: 413 });
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

export function createCodecServer(options: CodecServerOptions): Server {
  const origins = new Set(options.corsOrigins ?? []);
  return createServer((req, res) => {
    const origin = req.headers.origin;
    if (origin && origins.has(origin)) {
      res.setHeader('access-control-allow-origin', origin);
      res.setHeader('access-control-allow-credentials', 'true');
      res.setHeader('access-control-allow-methods', 'POST, OPTIONS');
      res.setHeader('access-control-allow-headers', 'content-type, x-namespace, authorization');
      res.setHeader('vary', 'origin');
    }
    if (req.method === 'OPTIONS') {
      res.writeHead(origin && origins.has(origin) ? 204 : 403).end();
      return;
    }
    const route = req.url?.split('?')[0];
    if (req.method !== 'POST' || (route !== '/encode' && route !== '/decode')) {
      send(res, 404, { error: 'POST /encode or /decode' });
      return;
    }
    if (options.token && !tokenMatches(req.headers.authorization, options.token)) {
      send(res, 401, { error: 'a bearer token is required (KEEL_CODEC_TOKEN)' });
      return;
    }
    void (async () => {
      try {
        const parsed = bodySchema.safeParse(JSON.parse(await readBody(req)));
        if (!parsed.success) {
          send(res, 400, { error: z.prettifyError(parsed.error) });
          return;
        }
        const payloads = parsed.data.payloads.map(toPayload);
        const out = route === '/encode' ? await options.codec.encode(payloads) : await options.codec.decode(payloads);
        send(res, 200, { payloads: out.map(fromPayload) });
      } catch (error) {
        const status = (error as { status?: number }).status ?? (error instanceof SyntaxError ? 400 : 500);
        // The reason, never the payload: a decode error must not echo what it could not read.
        send(res, status, { error: status === 500 ? `cannot ${route.slice(1)}: ${(error as Error).name}` : (error as Error).message });
      }
    })();
  });
}

/** Starts it and resolves with its URL. */
export async function listenCodecServer(server: Server, port = 8888, host = '127.0.0.1'): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  return `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`;
}
