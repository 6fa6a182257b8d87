// Encryption of every payload Keel writes to Temporal (and of the conversation store):
// AES-256-GCM through WebCrypto, the key id in each payload's metadata so keys can rotate —
// encrypt with the newest key, decrypt with any listed one. Off unless keys are given:
//   KEEL_ENCRYPTION_KEYS="k2:<base64 32 bytes>,k1:<base64 32 bytes>"   (newest first)
//   KEEL_ENCRYPTION_KEY_FILE=/run/secrets/keel-keys                    (same format, one per line)
// `keel keygen` prints a fresh key. The client, the worker and the codec server read the
// same variables, so all three agree.
import { readFileSync } from 'node:fs';
import { webcrypto } from 'node:crypto';
import { type DataConverter, METADATA_ENCODING_KEY, type Payload, type PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';
import { keelEnv } from './env';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
const KEY_ID_METADATA = 'encryption-key-id';
const CIPHER = 'AES-GCM';
const IV_BYTES = 12;
const ProtoPayload = proto.temporal.api.common.v1.Payload;

export interface EncryptionKey {
  id: string;
  key: webcrypto.CryptoKey;
}

export class EncryptionConfigError extends Error {
  override readonly name = 'EncryptionConfigError';
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Parses `id:base64,id:base64` (or one per line); each key must be 32 bytes. */
export async function parseKeys(text: string, source: string): Promise<EncryptionKey[]> {
  const entries = text
    .split(/[\n,]/)
    .map((s) => s.trim())
    .filter((s) => s && !s.startsWith('#'));
  if (entries.length === 0) throw new EncryptionConfigError(`${source} lists no key`);
  const seen = new Set<string>();
  const keys: EncryptionKey[] = [];
  for (const entry of entries) {
    const colon = entry.indexOf(':');
    if (colon <= 0) throw new EncryptionConfigError(`${source}: each key is "id:base64", got an entry without an id`);
    const id = entry.slice(0, colon);
    if (seen.has(id)) throw new EncryptionConfigError(`${source}: key id "${id}" appears twice`);
    seen.add(id);
    const raw = Buffer.from(entry.slice(colon + 1), 'base64');
    if (raw.length !== 32) throw new EncryptionConfigError(`${source}: key "${id}" is ${raw.length} bytes; AES-256 needs 32 (make one with \`keel keygen\`)`);
    keys.push({ id, key: await webcrypto.subtle.importKey('raw', raw, CIPHER, false, ['encrypt', 'decrypt']) });
  }
  return keys;
}

/** The keys from KEEL_ENCRYPTION_KEYS or KEEL_ENCRYPTION_KEY_FILE; none when neither is set. */
export async function loadEncryptionKeys(env: NodeJS.ProcessEnv = process.env): Promise<EncryptionKey[] | null> {
  const inline = keelEnv(env, 'KEEL_ENCRYPTION_KEYS')?.trim();
  const file = keelEnv(env, 'KEEL_ENCRYPTION_KEY_FILE')?.trim();
  if (inline && file) throw new EncryptionConfigError('set KEEL_ENCRYPTION_KEYS or KEEL_ENCRYPTION_KEY_FILE, not both');
  if (inline) return parseKeys(inline, 'KEEL_ENCRYPTION_KEYS');
  if (file) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new EncryptionConfigError(`KEEL_ENCRYPTION_KEY_FILE ${file}: ${(error as Error).message}`);
    }
    return parseKeys(text, `KEEL_ENCRYPTION_KEY_FILE ${file}`);
  }
  return null;
}

/** A fresh key line for KEEL_ENCRYPTION_KEYS. */
export function generateKeyLine(id: string): string {
  return `${id}:${Buffer.from(webcrypto.getRandomValues(new Uint8Array(32))).toString('base64')}`;
}

/** Encrypts bytes with the newest key: 12-byte IV followed by the GCM ciphertext and tag. */
export async function encryptBytes(keys: readonly EncryptionKey[], plain: Uint8Array): Promise<{ keyId: string; data: Uint8Array }> {
  const newest = keys[0];
  if (!newest) throw new EncryptionConfigError('no encryption key');
  const iv = webcrypto.getRandomValues(new Uint8Array(IV_BYTES));
  const sealed = new Uint8Array(await webcrypto.subtle.encrypt({ name: CIPHER, iv }, newest.key, plain));
  const data = new Uint8Array(IV_BYTES + sealed.length);
  data.set(iv);
  data.set(sealed, IV_BYTES);
  return { keyId: newest.id, data };
}

export async function decryptBytes(keys: readonly EncryptionKey[], keyId: string, data: Uint8Array): Promise<Uint8Array> {
  const entry = keys.find((k) => k.id === keyId);
  if (!entry) throw new EncryptionConfigError(`data was encrypted with key "${keyId}", which is not among the configured keys (${keys.map((k) => k.id).join(', ')})`);
  const plain = await webcrypto.subtle.decrypt({ name: CIPHER, iv: data.subarray(0, IV_BYTES) }, entry.key, data.subarray(IV_BYTES));
  return new Uint8Array(plain);
}

/** The whole payload (metadata and data) is sealed, so not even its encoding is visible. */
export class EncryptionCodec implements PayloadCodec {
  constructor(readonly keys: readonly EncryptionKey[]) {
    if (keys.length === 0) throw new EncryptionConfigError('an encryption codec needs at least one key');
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return Promise.all(
      payloads.map(async (payload) => {
        const { keyId, data } = await encryptBytes(this.keys, ProtoPayload.encode(payload).finish());
        return { metadata: { [METADATA_ENCODING_KEY]: encoder.encode(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: encoder.encode(keyId) }, data };
      }),
    );
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return Promise.all(
      payloads.map(async (payload) => {
        const encoding = payload.metadata?.[METADATA_ENCODING_KEY];
        if (!encoding || decoder.decode(encoding) !== ENCRYPTED_ENCODING) return payload;
        const keyId = payload.metadata?.[KEY_ID_METADATA];
        if (!keyId || !payload.data) throw new EncryptionConfigError('an encrypted payload without a key id or data');
        const plain = await decryptBytes(this.keys, decoder.decode(keyId), payload.data);
        return ProtoPayload.decode(plain);
      }),
    );
  }
}

/** The codec for the configured keys, or none when encryption is off. */
export async function loadPayloadCodec(env: NodeJS.ProcessEnv = process.env): Promise<EncryptionCodec | null> {
  const keys = await loadEncryptionKeys(env);
  return keys ? new EncryptionCodec(keys) : null;
}

/**
 * The data converter for clients and workers: with keys, every payload is encrypted. Null
 * when encryption is off. Failure messages and stack traces are not payloads and stay
 * readable (encoding them would need the same converter inside every workflow bundle);
 * Keel keeps conversation text out of them: tool errors and model output are results.
 */
export async function keelDataConverter(env: NodeJS.ProcessEnv = process.env): Promise<DataConverter | null> {
  const codec = await loadPayloadCodec(env);
  if (!codec) return null;
  return { payloadCodecs: [codec] };
}
