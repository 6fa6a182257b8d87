// Who approved is proven by the channel, not claimed in the payload. Keel's own clients
// (the API server, the CLI, the SDK) mark an approval `proven: true`; their payload codec
// signs it (HMAC-SHA256 over call id and approver, in the payload's metadata) with the
// approver key. The worker's codec checks the signature when it decodes and writes back
// `proven: true` only when it holds; anything else — a raw Temporal client, a command that
// reached Temporal, a forged `proven` — arrives as `proven: false`, and the workflow records
// the approver as `claimed: <name> via temporal client`.
//
// The key: KEEL_APPROVER_KEY (base64, 32 bytes), else `<config dir>/approver.key`, created
// (0600) by the first Keel process that needs it. Whoever can read it can prove any name.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { METADATA_ENCODING_KEY, type Payload, type PayloadCodec } from '@temporalio/common';
import { configDir } from './config-dir';

const PROOF_METADATA = 'keel-approver-proof';
const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function loadApproverKey(env: NodeJS.ProcessEnv = process.env): Buffer {
  const given = env.KEEL_APPROVER_KEY?.trim();
  if (given) {
    const key = Buffer.from(given, 'base64');
    if (key.length < 32) throw new Error('KEEL_APPROVER_KEY must be at least 32 bytes, base64');
    return key;
  }
  const file = path.join(configDir(env), 'approver.key');
  try {
    return Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  } catch {
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    const key = randomBytes(32);
    try {
      writeFileSync(file, `${key.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
      return key;
    } catch {
      return Buffer.from(readFileSync(file, 'utf8').trim(), 'base64'); // another process made it first
    }
  }
}

/** The payload's own JSON object (`raw`, passed on as it came) and the name its proof covers. */
type Approval = { raw: Record<string, unknown>; approver: string; callId: unknown; proven: unknown };

/** Bytes as text, or undefined for anything that is not bytes (a hostile client sends anything). */
function textOf(bytes: unknown): string | undefined {
  if (!(bytes instanceof Uint8Array)) return undefined;
  try {
    return decoder.decode(bytes);
  } catch {
    return undefined;
  }
}

/**
 * Whether JSON bytes can hold an `approver` or a `proven` key: only if they spell one, or
 * have a `\u` escape (the only escape that can spell a letter). Every payload passes this
 * codec — model results of many KiB too — and parsing them all cost ~0.25 ms of worker CPU
 * a step (bench profile 2026-11-28).
 */
function mayHoldApproval(data: Uint8Array): boolean {
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return bytes.includes('approver') || bytes.includes('proven') || bytes.includes('\\u');
}

function approvalOf(payload: Payload): Approval | undefined {
  if (textOf(payload.metadata?.[METADATA_ENCODING_KEY]) !== 'json/plain') return undefined;
  if (!(payload.data instanceof Uint8Array) || !mayHoldApproval(payload.data)) return undefined;
  const text = textOf(payload.data);
  if (!text) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const record = value as Record<string, unknown>;
  if (typeof record.approver !== 'string' && !('proven' in record)) return undefined;
  return { raw: record, approver: typeof record.approver === 'string' ? record.approver : '', callId: record.callId, proven: record.proven };
}

export class ApproverProofCodec implements PayloadCodec {
  constructor(private readonly key: Buffer) {}

  private proof(a: Approval): Buffer {
    return createHmac('sha256', this.key).update(`${String(a.callId)}\n${a.approver}`).digest();
  }

  encode(payloads: Payload[]): Promise<Payload[]> {
    return Promise.resolve(
      payloads.map((payload) => {
        const a = approvalOf(payload);
        if (!a || a.proven !== true) return payload;
        return { ...payload, metadata: { ...payload.metadata, [PROOF_METADATA]: encoder.encode(this.proof(a).toString('base64')) } };
      }),
    );
  }

  decode(payloads: Payload[]): Promise<Payload[]> {
    return Promise.resolve(
      payloads.map((payload) => {
        const a = approvalOf(payload);
        if (!a) return payload;
        const expected = this.proof(a);
        const presented = Buffer.from(textOf(payload.metadata?.[PROOF_METADATA]) ?? '', 'base64');
        const proven = a.proven === true && presented.length === expected.length && timingSafeEqual(presented, expected);
        const metadata = { ...payload.metadata };
        delete metadata[PROOF_METADATA];
        // `proven` becomes the codec's verdict, whatever the sender said.
        return { metadata, data: encoder.encode(JSON.stringify({ ...a.raw, proven })) };
      }),
    );
  }
}
