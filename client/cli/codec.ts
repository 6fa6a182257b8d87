// `keel codec-server` and `keel keygen`: the operator's side of payload encryption
// (worker/encryption.ts).
import { createCodecServer, listenCodecServer } from '../../worker/codec-server';
import { EncryptionConfigError, generateKeyLine, loadPayloadCodec } from '../../worker/encryption';
import { CliExit } from './common';
import { EXIT } from './output';

export interface CodecServerCommandOptions {
  port: string;
  host: string;
  cors: string[];
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
  const token = process.env.KEEL_CODEC_TOKEN || undefined;
  const server = createCodecServer({ codec, corsOrigins: o.cors, ...(token ? { token } : {}) });
  const url = await listenCodecServer(server, port, o.host);
  console.log(`keel codec-server: ${url} (keys ${codec.keys.map((k) => k.id).join(', ')}; CORS for ${o.cors.join(', ') || 'no browser origin'}${token ? '; bearer token required' : ''})`);
  console.log(`  Web UI: Settings → Data Encoder → ${url}    CLI: temporal workflow show -w <id> --codec-endpoint ${url}`);
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
