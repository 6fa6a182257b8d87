// `keel serve`: the HTTP API and web console (server/) on 127.0.0.1.
import path from 'node:path';
import { KeelClient } from '../keel-client';
import { DEFAULT_PORT, startBanner, startServer } from '../../server/main';

export interface ServeCommandOptions {
  port?: string;
  host?: string;
  workspace?: string;
}

export async function serveCommand(o: ServeCommandOptions): Promise<void> {
  const port = o.port === undefined ? Number(process.env.KEEL_SERVE_PORT ?? DEFAULT_PORT) : Number(o.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write('keel: --port must be a port number\n');
    process.exitCode = 2;
    return;
  }
  const keel = await KeelClient.connect();
  const server = await startServer({ keel, port, ...(o.host ? { host: o.host } : {}), workspace: path.resolve(o.workspace ?? process.cwd()) });
  for (const line of startBanner(server)) console.log(line);
  if (o.host && o.host !== '127.0.0.1' && o.host !== 'localhost' && o.host !== '::1') console.log(`  warning: listening on ${o.host}, not only this machine; put TLS in front of it`);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await server.close();
  await keel.close();
}
