// The codec server (`keel codec-server`): Temporal's remote-codec convention, so the Web UI
// and `temporal workflow show --codec-endpoint` can show payloads Keel encrypted. POST
// /encode and /decode take and return `{"payloads":[{"metadata":{k: base64}, "data": base64}]}`.
//
// Whoever reaches it can read every payload, so it answers only:
// - a request carrying the token, as `Authorization: Bearer <token>` (the Temporal CLI's
//   `--codec-auth`) or as the first path segment, `/<token>/decode` (the Web UI's Data
//   Encoder setting is a bare URL and sends no header of ours; the remote-codec protocol
//   says a server looks only at the last segment, so the UI appends /decode to it);
// - from a browser, only the configured Web UI origins (any other Origin is a 403, so a
//   page the operator visits cannot use the operator's network position);
// - with a Host naming the address it listens on (a DNS-rebinding page sends its own name);
// - a JSON body (415 otherwise) of bounded size (413) in the shape the Web UI sends (400).
import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { z } from 'zod';

export interface CodecServerOptions {
  codec: PayloadCodec;
  /** The only bearer/path token it answers. */
  token: string;
  /** Browser origins allowed to call it (the Web UI's), e.g. http://localhost:8233. */
  corsOrigins?: readonly string[];
  /** Host names (without port) a request may name; undefined: any (bound to all interfaces). */
  hosts?: readonly string[];
}

/** Loopback names: the hosts a codec server bound to 127.0.0.1 or ::1 answers. */
export const LOOPBACK_HOSTS = ['127.0.0.1', 'localhost', '::1'] as const;

/** Temporal refuses a gRPC message over 4 MiB by default, so one Payloads list never exceeds
 *  it; base64 adds a third. 8 MiB leaves room and bounds what a caller makes us buffer. */
export const MAX_BODY_BYTES = 8 * 1024 * 1024;
export const MIN_TOKEN_LENGTH = 16;

const base64 = z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64');
const bodySchema = z.strictObject({
  payloads: z.array(z.strictObject({ metadata: z.record(z.string(), base64).optional(), data: base64.optional(), externalPayloads: z.array(z.unknown()).optional() })).max(10_000),
});

const toPayload = (p: z.infer<typeof bodySchema>['payloads'][number]): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: Buffer.from(p.data ?? '', 'base64'),
});
const fromPayload = (p: Payload) => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? new Uint8Array()).toString('base64')])),
  data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
});

function same(given: string, token: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

class Refusal extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function readBody(req: IncomingMessage): Promise<string> {
  const declared = Number(req.headers['content-length']);
  if (declared > MAX_BODY_BYTES) throw new Refusal(413, `request body over ${MAX_BODY_BYTES} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new Refusal(413, `request body over ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

/** `Host: name:port` / `[::1]:port` → name. */
function hostName(host: string | undefined): string | undefined {
  if (!host) return undefined;
  const m = /^\[([^\]]+)\](?::\d+)?$/.exec(host) ?? /^([^:]+)(?::\d+)?$/.exec(host);
  return m?.[1]?.toLowerCase();
}

type Route = { op: 'encode' | 'decode'; pathToken: string | undefined };

/** `/encode`, `/decode`, or `/<token>/encode|decode`; anything else is not a route. */
function routeOf(url: string | undefined): Route | undefined {
  const segments = (url?.split('?')[0] ?? '').split('/').filter(Boolean);
  const op = segments.at(-1);
  if ((op !== 'encode' && op !== 'decode') || segments.length > 2) return undefined;
  return { op, pathToken: segments.length === 2 ? decodeURIComponent(segments[0]!) : undefined };
}

export function createCodecServer(options: CodecServerOptions): Server {
  if (options.token.length < MIN_TOKEN_LENGTH) throw new Error(`the codec server's token must be at least ${MIN_TOKEN_LENGTH} characters`);
  const origins = new Set(options.corsOrigins ?? []);
  const hosts = options.hosts ? new Set(options.hosts.map((h) => h.toLowerCase())) : undefined;
  return createServer((req, res) => {
    const origin = req.headers.origin;
    if (hosts && !hosts.has(hostName(req.headers.host) ?? '')) {
      send(res, 421, { error: `Host ${JSON.stringify(req.headers.host ?? '')} is not this codec server's address` });
      return;
    }
    // A browser always sends Origin on a cross-origin POST; a page from anywhere else is refused
    // outright (not merely left without CORS headers, which would still let a "simple" request run).
    if (origin !== undefined && !origins.has(origin)) {
      send(res, 403, { error: `origin ${origin} is not allowed (keel codec-server --cors)` });
      return;
    }
    if (origin !== undefined) {
      res.setHeader('access-control-allow-origin', origin);
      res.setHeader('access-control-allow-credentials', 'true');
      res.setHeader('access-control-allow-methods', 'POST, OPTIONS');
      res.setHeader('access-control-allow-headers', 'content-type, x-namespace, authorization');
      res.setHeader('vary', 'origin');
    }
    if (req.method === 'OPTIONS') {
      res.writeHead(204).end();
      return;
    }
    const route = routeOf(req.url);
    if (req.method !== 'POST' || !route) {
      send(res, 404, { error: 'POST /encode or /decode' });
      return;
    }
    const header = req.headers.authorization?.match(/^Bearer\s+(.+)$/i)?.[1];
    const given = header ?? route.pathToken;
    if (given === undefined || !same(given, options.token)) {
      send(res, 401, { error: 'the codec server token is required: Authorization: Bearer <token>, or <url>/<token> as the Web UI endpoint' });
      return;
    }
    const type = req.headers['content-type']?.split(';')[0]?.trim().toLowerCase();
    if (type !== 'application/json') {
      send(res, 415, { error: 'the body must be application/json' });
      return;
    }
    void (async () => {
      try {
        let json: unknown;
        try {
          json = JSON.parse(await readBody(req));
        } catch (error) {
          if (error instanceof Refusal) throw error;
          throw new Refusal(400, 'the body is not JSON');
        }
        const parsed = bodySchema.safeParse(json);
        if (!parsed.success) throw new Refusal(400, z.prettifyError(parsed.error));
        const payloads = parsed.data.payloads.map(toPayload);
        const out = route.op === 'encode' ? await options.codec.encode(payloads) : await options.codec.decode(payloads);
        send(res, 200, { payloads: out.map(fromPayload) });
      } catch (error) {
        if (error instanceof Refusal) {
          // The rest of an oversized body is never read: close the connection after answering.
          if (error.status === 413) res.setHeader('connection', 'close');
          send(res, error.status, { error: error.message });
          return;
        }
        // The reason, never the payload: a decode error must not echo what it could not read.
        send(res, 500, { error: `cannot ${route.op}: ${(error as Error).name}` });
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
