// The approver-proof codec (shared/approver-proof.ts) runs on every payload a worker decodes,
// whoever sent it: it must prove Keel's own approvals, refuse forged ones, and never throw on
// what a hostile client sends (a throw there fails the workflow task, again and again).
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Payload } from '@temporalio/common';
import { ApproverProofCodec } from '../../shared/approver-proof';

const json = (value: unknown): Payload => ({ metadata: { encoding: new TextEncoder().encode('json/plain') }, data: new TextEncoder().encode(JSON.stringify(value)) });
const read = (p: Payload) => JSON.parse(new TextDecoder().decode(p.data)) as Record<string, unknown>;

describe('approver proof codec', () => {
  const codec = new ApproverProofCodec(randomBytes(32));

  it("proves an approval Keel's client signed, and only for the call and approver it signed", async () => {
    const [signed] = await codec.encode([json({ callId: 'c1', approver: 'Ada (API token)', proven: true })]);
    expect(read((await codec.decode([signed!]))[0]!)).toMatchObject({ callId: 'c1', approver: 'Ada (API token)', proven: true });
    // The same signature on another approver's name is not a proof.
    const forged = { ...signed!, data: json({ callId: 'c1', approver: 'Mallory', proven: true }).data };
    expect(read((await codec.decode([forged]))[0]!)).toMatchObject({ approver: 'Mallory', proven: false });
  });

  it('a raw client that claims `proven: true` without a signature is not proven', async () => {
    expect(read((await codec.decode([json({ callId: 'c1', approver: 'alice', proven: true })]))[0]!)).toMatchObject({ proven: false });
  });

  it('a key spelled with escapes is read as JSON reads it: `\\u0070roven` is `proven`, and is not proven', async () => {
    const escaped = (text: string): Payload => ({ metadata: { encoding: new TextEncoder().encode('json/plain') }, data: new TextEncoder().encode(text) });
    const [decoded] = await codec.decode([escaped('{"callId":"c1","\\u0061pprover":"Mallory","\\u0070roven":true}')]);
    expect(read(decoded!)).toMatchObject({ approver: 'Mallory', proven: false });
    // A payload that names neither key (a model's answer) is passed on as it came, not re-encoded.
    const answer = json({ text: 'no approval here', usage: { input: 1 } });
    expect((await codec.decode([answer]))[0]).toBe(answer);
  });

  it('passes anything else through unchanged and never throws, whatever the bytes', async () => {
    const odd: Payload[] = [
      { metadata: { encoding: 'json/plain' as unknown as Uint8Array }, data: new TextEncoder().encode('{"approver":"x"}') },
      { metadata: { encoding: new TextEncoder().encode('json/plain') }, data: 'not bytes' as unknown as Uint8Array },
      { metadata: { encoding: new TextEncoder().encode('json/plain') }, data: new Uint8Array([0xff, 0xfe, 0x7b]) },
      { metadata: { encoding: new TextEncoder().encode('binary/null') } },
      { metadata: null },
      json([1, 2, 3]),
    ];
    expect(await codec.decode(odd)).toEqual(odd);
    expect(await codec.encode(odd)).toEqual(odd);
  });
});
