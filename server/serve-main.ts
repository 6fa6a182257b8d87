// `keel serve` as a program of its own, for the image (dist/server/serve.js): the console and
// HTTP API in front of Temporal, configured by the environment as the worker is. The CLI's
// `keel serve` is the same server for a checkout; this entry needs no TypeScript loader.
// KEEL_SERVE_HOST (default 127.0.0.1; 0.0.0.0 in a container, behind TLS), KEEL_SERVE_PORT
// (8280), KEEL_SERVE_WORKSPACE (the root goals and sessions work under; default the cwd).
import path from 'node:path';
import { KeelClient } from '../client/keel-client';
import { DEFAULT_PORT, startBanner, startServer } from './main';

const env = process.env;
const port = Number(env.KEEL_SERVE_PORT || DEFAULT_PORT);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`keel serve: KEEL_SERVE_PORT must be a port number, not ${env.KEEL_SERVE_PORT}`);
  process.exit(2);
}
const keel = await KeelClient.connect();
const server = await startServer({ keel, port, host: env.KEEL_SERVE_HOST || '127.0.0.1', workspace: path.resolve(env.KEEL_SERVE_WORKSPACE || process.cwd()) });
for (const line of startBanner(server)) console.log(line);
await new Promise<void>((resolve) => {
  process.once('SIGINT', () => resolve());
  process.once('SIGTERM', () => resolve());
});
await server.close();
await keel.close();
