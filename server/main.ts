// Starts the API and console on 127.0.0.1 (a port on every interface only when asked).
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import type { KeelClient } from '../client/keel-client';
import { createApp } from './app';
import { loadTokens, type TokenSetup } from './auth';

export interface ServeOptions {
  keel: KeelClient;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 8280; 0 picks a free port. */
  port?: number;
  /** Where goals and sessions work when a request names none. */
  workspace: string;
  env?: NodeJS.ProcessEnv;
}

export interface RunningServer {
  url: string;
  port: number;
  tokens: TokenSetup;
  close(): Promise<void>;
}

export const DEFAULT_PORT = 8280;

export async function startServer(options: ServeOptions): Promise<RunningServer> {
  const tokens = loadTokens(options.env ?? process.env);
  const app = createApp({ keel: options.keel, tokens: tokens.tokens, workspace: options.workspace });
  const host = options.host ?? '127.0.0.1';
  const server = await new Promise<ServerType>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: host, port: options.port ?? DEFAULT_PORT }, () => resolve(s));
    s.once('error', reject);
  });
  const port = (server.address() as AddressInfo).port;
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}`,
    port,
    tokens,
    close: () =>
      new Promise<void>((resolve) => {
        // Open event streams would keep close() waiting for ever.
        if ('closeAllConnections' in server) server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** What `keel serve` prints: the URL and, once, a generated token. */
export function startBanner(s: RunningServer): string[] {
  const lines = [`keel serve: console and API on ${s.url}  (OpenAPI: ${s.url}/openapi.json)`];
  if (s.tokens.generated) {
    lines.push(
      `  a new API token was generated (only its hash is kept in ${s.tokens.file}); it is shown this once:`,
      `    ${s.tokens.generated}`,
      `  open the console: ${s.url}/#token=${s.tokens.generated}`,
    );
  } else if (s.tokens.source === 'env') {
    lines.push('  token: KEEL_API_TOKEN');
  } else {
    lines.push(`  token: one of ${s.tokens.file} (lost it? delete the file and start again for a new one)`);
  }
  return lines;
}
