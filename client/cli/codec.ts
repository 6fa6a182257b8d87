// `keel codec-server` and `keel keygen`: the operator's side of payload encryption
// (shared/encryption.ts).
import { randomBytes } from 'node:crypto';
import { createCodecServer, listenCodecServer, LOOPBACK_HOSTS, MIN_TOKEN_LENGTH } from '../../worker/codec-server';
import { EncryptionConfigError, generateKeyLine, loadPayloadCodec } from '../../shared/encryption';
import { CliExit } from './common';
import { EXIT } from './output';

export interface CodecServerCommandOptions {
  port: string;
  host: string;
  cors: string[];
  allowedHost?: string[];
}

export async function codecServerCommand(o: CodecServerCommandOptions): Promise<void> {
  try {
    await serve(o);
  } catch (error) {
    if (!(error instanceof CliExit)) throw error;
    process.stderr.write(`keel: ${error.message}\n`);
    process.exitCode = error.code;
  }
}

/** The Host names it answers: loopback when bound to loopback, else the bind address and
 *  --allowed-host; bound to every interface with no --allowed-host, any name (the token
 *  still guards it). */
function hostsFor(host: string, allowed: string[] | undefined): string[] | undefined {
  const loopback = (LOOPBACK_HOSTS as readonly string[]).includes(host) || host.startsWith('127.');
  if (loopback) return [...LOOPBACK_HOSTS, host, ...(allowed ?? [])];
  if (allowed?.length) return [host, ...allowed];
  return host === '0.0.0.0' || host === '::' ? undefined : [host];
}

async function serve(o: CodecServerCommandOptions): Promise<void> {
  let codec;
  try {
    codec = await loadPayloadCodec();
  } catch (error) {
    if (error instanceof EncryptionConfigError) throw new CliExit(EXIT.usage, error.message);
    throw error;
  }
  if (!codec) throw new CliExit(EXIT.usage, 'encryption is off: set KEEL_ENCRYPTION_KEYS or KEEL_ENCRYPTION_KEY_FILE to the keys the workers use');
  const port = Number(o.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new CliExit(EXIT.usage, '--port must be a port number');
  const given = process.env.KEEL_CODEC_TOKEN?.trim();
  if (given && given.length < MIN_TOKEN_LENGTH) throw new CliExit(EXIT.usage, `KEEL_CODEC_TOKEN must be at least ${MIN_TOKEN_LENGTH} characters`);
  // Never without a token: when none is configured, one for this run, printed below.
  const token = given || randomBytes(24).toString('hex');
  const hosts = hostsFor(o.host, o.allowedHost);
  const server = createCodecServer({ codec, token, corsOrigins: o.cors, ...(hosts ? { hosts } : {}) });
  const url = await listenCodecServer(server, port, o.host);
  console.log(`keel codec-server: ${url} (keys ${codec.keys.map((k) => k.id).join(', ')}; browser origins ${o.cors.join(', ') || 'none'}; token required, ${given ? 'KEEL_CODEC_TOKEN' : 'made for this run'})`);
  const shown = given ? '$KEEL_CODEC_TOKEN' : token;
  console.log(`  Web UI: Settings → Data Encoder → ${url}/${shown}`);
  console.log(`  CLI: temporal workflow show -w <id> --codec-endpoint ${url} --codec-auth "Bearer ${shown}"`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  server.closeAllConnections();
  server.close();
}

export function keygenCommand(o: { id?: string }): void {
  const id = o.id ?? `k${new Date().toISOString().slice(0, 10).replace(/-/g, '')}`;
  console.log(generateKeyLine(id));
}
