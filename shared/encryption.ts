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
import { ApproverProofCodec, loadApproverKey } from './approver-proof';
import { keelEnv } from './env';

export const ENCRYPTED_ENCODING = 'binary/encrypted';
/**
 * What a worker with keys makes of a payload that was not encrypted with one of them (a
 * signal, update or start input from a client without the keys): no converter decodes
 * it, so every handler refuses it as an invalid payload — `event.rejected` for a signal,
 * a rejected update, a failed start — and nothing changes.
 */
export const UNAUTHENTICATED_ENCODING = 'keel/unauthenticated';
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
  constructor(
    readonly keys: readonly EncryptionKey[],
    /** The worker's side: a plaintext payload is refused (only key holders may act). */
    readonly requireEncrypted = false,
  ) {
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
        if (!encoding || decoder.decode(encoding) !== ENCRYPTED_ENCODING) {
          return this.requireEncrypted ? { metadata: { [METADATA_ENCODING_KEY]: encoder.encode(UNAUTHENTICATED_ENCODING) }, data: new Uint8Array() } : payload;
        }
        const keyId = payload.metadata?.[KEY_ID_METADATA];
        if (!keyId || !payload.data) throw new EncryptionConfigError('an encrypted payload without a key id or data');
        const plain = await decryptBytes(this.keys, decoder.decode(keyId), payload.data);
        return ProtoPayload.decode(plain);
      }),
    );
  }
}

/** The codec for the configured keys, or none when encryption is off. */
export async function loadPayloadCodec(env: NodeJS.ProcessEnv = process.env, options: { requireEncrypted?: boolean } = {}): Promise<EncryptionCodec | null> {
  const keys = await loadEncryptionKeys(env);
  return keys ? new EncryptionCodec(keys, options.requireEncrypted ?? false) : null;
}

/**
 * The data converter for clients and workers: with keys, every payload is encrypted. Null
 * when encryption is off. A worker (`failureConverterPath`: a module exporting a
 * `failureConverter` that encodes common attributes) also moves failure messages and stack
 * traces into an encrypted payload, and refuses plaintext payloads (`requireEncrypted`).
 */
export async function keelDataConverter(
  env: NodeJS.ProcessEnv = process.env,
  worker?: { failureConverterPath: string },
): Promise<DataConverter> {
  const codec = await loadPayloadCodec(env, { requireEncrypted: worker !== undefined });
  // The approver proof sits inside the encryption: codecs encode in order, decode in reverse.
  const proof = new ApproverProofCodec(loadApproverKey(env));
  if (!codec) return { payloadCodecs: [proof] };
  return { payloadCodecs: [proof, codec], ...(worker ? { failureConverterPath: worker.failureConverterPath } : {}) };
}
