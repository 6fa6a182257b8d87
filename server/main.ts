// Starts the API and console on 127.0.0.1 (a port on every interface only when asked).
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import type { KeelClient } from '../client/keel-client';
import { createApp } from './app';
import { loadTokens, type TokenSetup } from './auth';
import { LoginCodes } from './login';

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
  /** Opens the console signed in: a one-time code, valid 15 minutes (a new one at every start). */
  loginUrl: string;
  close(): Promise<void>;
}

export const DEFAULT_PORT = 8280;

export async function startServer(options: ServeOptions): Promise<RunningServer> {
  const tokens = loadTokens(options.env ?? process.env);
  const login = new LoginCodes(tokens);
  const corsOrigins = corsOriginsOf(options.env ?? process.env);
  const app = createApp({ keel: options.keel, tokens: tokens.tokens, workspace: options.workspace, login, corsOrigins });
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
    loginUrl: `http://${shown}:${port}/#login=${login.issue()}`,
    close: () =>
      new Promise<void>((resolve) => {
        // Open event streams would keep close() waiting for ever.
        if ('closeAllConnections' in server) server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** KEEL_CORS_ORIGINS: origins (scheme://host[:port], comma-separated) whose pages may call the API. */
export function corsOriginsOf(env: NodeJS.ProcessEnv): string[] {
  const list = (env.KEEL_CORS_ORIGINS ?? '').split(',').map((o) => o.trim()).filter(Boolean);
  for (const o of list) if (!/^https?:\/\/[A-Za-z0-9.-]+(:\d{1,5})?$/.test(o)) throw new Error(`KEEL_CORS_ORIGINS: ${o} is not an origin (scheme://host[:port], no path)`);
  return list;
}

/** What `keel serve` prints: the URL, a login link (at every start) and, once, a generated token. */
export function startBanner(s: RunningServer): string[] {
  const lines = [`keel serve: console and API on ${s.url}  (OpenAPI: ${s.url}/openapi.json)`, `  sign in to the console: ${s.loginUrl}  (works once, for 15 minutes)`];
  if (s.tokens.generated) {
    lines.push(`  a new API token was generated (only its hash is kept in ${s.tokens.file}); it is shown this once:`, `    ${s.tokens.generated}`);
  } else if (s.tokens.source === 'env') {
    lines.push('  token: KEEL_API_TOKEN');
  } else {
    lines.push(`  token: one of ${s.tokens.file} (lost it? delete the file and start again for a new one)`);
  }
  return lines;
}
