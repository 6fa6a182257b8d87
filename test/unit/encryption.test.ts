// Payload encryption (shared/encryption.ts) and the codec server (worker/codec-server.ts):
// what an operator relies on — nothing readable without a key, rotation, clear errors.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { appendSegment, clearSegmentCache, readConversation } from '../../activities/conversation-store';
import { createCodecServer, listenCodecServer, LOOPBACK_HOSTS, MAX_BODY_BYTES } from '../../worker/codec-server';
import { EncryptionCodec, EncryptionConfigError, generateKeyLine, loadEncryptionKeys, loadPayloadCodec, parseKeys } from '../../shared/encryption';

const CANARY = 'canary-7d1f3e secret plans';
const TOKEN = 'codec-token-0123456789abcdef';
const payload = (value: unknown): Payload => defaultPayloadConverter.toPayload(value);
const text = (p: Payload) => Buffer.from(p.data ?? new Uint8Array()).toString('latin1') + JSON.stringify(p.metadata);

describe('encryption codec', () => {
  it('seals data and metadata; decodes back to the same payload', async () => {
    const codec = new EncryptionCodec(await parseKeys(generateKeyLine('k1'), 'test'));
    const [sealed] = await codec.encode([payload({ text: CANARY })]);
    expect(text(sealed!)).not.toContain('canary');
    expect(text(sealed!)).not.toContain('json/plain');
    expect(Buffer.from(sealed!.metadata!['encryption-key-id']!).toString()).toBe('k1');
    const [opened] = await codec.decode([sealed!]);
    expect(defaultPayloadConverter.fromPayload(opened!)).toEqual({ text: CANARY });
  });

  it('two encodings of the same value differ (fresh IV each time)', async () => {
    const codec = new EncryptionCodec(await parseKeys(generateKeyLine('k1'), 'test'));
    const [a, b] = await codec.encode([payload(CANARY), payload(CANARY)]);
    expect(Buffer.from(a!.data!).equals(Buffer.from(b!.data!))).toBe(false);
  });

  it('rotates: encrypts with the newest key, still decrypts what an older key sealed', async () => {
    const old = generateKeyLine('k1');
    const before = new EncryptionCodec(await parseKeys(old, 'test'));
    const [sealedOld] = await before.encode([payload('old')]);
    const after = new EncryptionCodec(await parseKeys(`${generateKeyLine('k2')},${old}`, 'test'));
    const [sealedNew] = await after.encode([payload('new')]);
    expect(Buffer.from(sealedNew!.metadata!['encryption-key-id']!).toString()).toBe('k2');
    const [a, b] = await after.decode([sealedOld!, sealedNew!]);
    expect(defaultPayloadConverter.fromPayload(a!)).toBe('old');
    expect(defaultPayloadConverter.fromPayload(b!)).toBe('new');
    // The old key alone cannot read the new payload and says which key is missing.
    await expect(before.decode([sealedNew!])).rejects.toThrow(/key "k2", which is not among the configured keys \(k1\)/);
  });

  it('a tampered payload fails to decrypt instead of decoding to garbage', async () => {
    const codec = new EncryptionCodec(await parseKeys(generateKeyLine('k1'), 'test'));
    const [sealed] = await codec.encode([payload(CANARY)]);
    const data = Buffer.from(sealed!.data!);
    data[data.length - 1]! ^= 1;
    await expect(codec.decode([{ ...sealed!, data }])).rejects.toThrow();
  });

  it('leaves payloads it did not seal alone', async () => {
    const codec = new EncryptionCodec(await parseKeys(generateKeyLine('k1'), 'test'));
    const plain = payload('plain');
    expect(await codec.decode([plain])).toEqual([plain]);
  });

  it('is off without keys and names the mistake in bad key settings', async () => {
    expect(await loadPayloadCodec({})).toBeNull();
    await expect(loadEncryptionKeys({ KEEL_ENCRYPTION_KEYS: 'k1:c2hvcnQ=' })).rejects.toThrow(/key "k1" is 5 bytes; AES-256 needs 32/);
    await expect(loadEncryptionKeys({ KEEL_ENCRYPTION_KEYS: 'abc' })).rejects.toThrow(EncryptionConfigError);
    const line = generateKeyLine('k1');
    await expect(loadEncryptionKeys({ KEEL_ENCRYPTION_KEYS: `${line},${line}` })).rejects.toThrow(/appears twice/);
    await expect(loadEncryptionKeys({ KEEL_ENCRYPTION_KEYS: line, KEEL_ENCRYPTION_KEY_FILE: '/x' })).rejects.toThrow(/not both/);
    await expect(loadEncryptionKeys({ KEEL_ENCRYPTION_KEY_FILE: '/nonexistent/keys' })).rejects.toThrow(/ENOENT/);
  });
});

describe('codec server', () => {
  let url: string;
  let codec: EncryptionCodec;
  const server = { close: () => {} };

  beforeAll(async () => {
    codec = new EncryptionCodec(await parseKeys(generateKeyLine('k1'), 'test'));
    const s = createCodecServer({ codec, corsOrigins: ['http://localhost:8233'], token: TOKEN, hosts: LOOPBACK_HOSTS });
    url = await listenCodecServer(s, 0);
    expect((s.address() as AddressInfo).address).toBe('127.0.0.1');
    server.close = () => s.close();
  });
  afterAll(() => server.close());

  const post = (route: string, body: unknown, headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` }) =>
    fetch(`${url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const wire = (p: Payload) => ({
    metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
    data: Buffer.from(p.data!).toString('base64'),
  });

  it('decodes what the codec encoded, as the Web UI and `temporal --codec-endpoint` ask', async () => {
    const [sealed] = await codec.encode([payload({ text: CANARY })]);
    const res = await post('/decode', { payloads: [wire(sealed!)] });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { payloads: { metadata: Record<string, string>; data: string }[] };
    expect(Buffer.from(body.payloads[0]!.data, 'base64').toString()).toBe(JSON.stringify({ text: CANARY }));
    expect(Buffer.from(body.payloads[0]!.metadata.encoding!, 'base64').toString()).toBe('json/plain');
    const enc = await post('/encode', { payloads: [wire(payload('x'))] });
    const encoded = (await enc.json()) as { payloads: { metadata: Record<string, string> }[] };
    expect(Buffer.from(encoded.payloads[0]!.metadata.encoding!, 'base64').toString()).toBe('binary/encrypted');
  });

  it('refuses a request without the token, and bad bodies with a reason', async () => {
    expect((await post('/decode', { payloads: [] }, {})).status).toBe(401);
    expect((await post('/decode', { payloads: [] }, { authorization: 'Bearer wrong-token-123456' })).status).toBe(401);
    expect((await post('/wrong-token-123456/decode', { payloads: [] }, {})).status).toBe(401);
    const bad = await post('/decode', { payloads: [{ data: '!!' }] });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toMatch(/base64/);
    expect((await post('/decode', { payloads: [{ data: 'AA==', extra: 1 }] })).status).toBe(400);
    expect((await post('/decode', { other: [] })).status).toBe(400);
    expect((await post('/nope', {})).status).toBe(404);
  });

  it('accepts the token as the first path segment, which is how the Web UI (a bare endpoint URL + /decode) carries it', async () => {
    const [sealed] = await codec.encode([payload({ text: CANARY })]);
    const res = await post(`/${TOKEN}/decode`, { payloads: [wire(sealed!)] }, {});
    expect(res.status).toBe(200);
  });

  it('accepts only a JSON body of bounded size', async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const text = await fetch(`${url}/decode`, { method: 'POST', headers: { ...auth, 'content-type': 'text/plain' }, body: JSON.stringify({ payloads: [] }) });
    expect(text.status).toBe(415);
    const form = await fetch(`${url}/decode`, { method: 'POST', headers: auth, body: new URLSearchParams({ payloads: '[]' }) });
    expect(form.status).toBe(415);
    const notJson = await fetch(`${url}/decode`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"payloads": [' });
    expect(notJson.status).toBe(400);
    const huge = await fetch(`${url}/decode`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ payloads: [{ data: 'A'.repeat(MAX_BODY_BYTES) }] }) });
    expect(huge.status).toBe(413);
  });

  it('answers only its configured Web UI origin, and refuses any other browser origin outright', async () => {
    const ok = await fetch(`${url}/decode`, { method: 'OPTIONS', headers: { origin: 'http://localhost:8233', 'access-control-request-method': 'POST' } });
    expect(ok.status).toBe(204);
    expect(ok.headers.get('access-control-allow-origin')).toBe('http://localhost:8233');
    expect(ok.headers.get('access-control-allow-headers')).toContain('x-namespace');
    const other = await fetch(`${url}/decode`, { method: 'OPTIONS', headers: { origin: 'http://evil.example', 'access-control-request-method': 'POST' } });
    expect(other.status).toBe(403);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    // A "simple" cross-origin POST needs no preflight: it must be refused, token or not.
    const [sealed] = await codec.encode([payload({ text: CANARY })]);
    const simple = await post('/decode', { payloads: [wire(sealed!)] }, { authorization: `Bearer ${TOKEN}`, origin: 'http://evil.example' });
    expect(simple.status).toBe(403);
    expect(await simple.text()).not.toContain('CANARY');
    const fromUi = await post(`/${TOKEN}/decode`, { payloads: [wire(sealed!)] }, { origin: 'http://localhost:8233' });
    expect(fromUi.status).toBe(200);
  });

  it('refuses a Host that is not its address (DNS rebinding)', async () => {
    const port = new URL(url).port;
    const status = (host: string) =>
      new Promise<number>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port, path: '/decode', method: 'POST', headers: { host, authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end('{"payloads":[]}');
      });
    expect(await status(`evil.example:${port}`)).toBe(421);
    expect(await status(`localhost:${port}`)).toBe(200);
    expect(await status(`127.0.0.1:${port}`)).toBe(200);
  });

  it('will not run without a token of some length', async () => {
    expect(() => createCodecServer({ codec, token: 'short' })).toThrow(/at least/);
  });
});

describe('conversation store at rest', () => {
  it('writes sealed segments with keys, reads them back, and still reads plain ones', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-sealed-'));
    try {
      const keys = await parseKeys(generateKeyLine('k1'), 'test');
      const plainHead = await appendSegment(dir, null, [{ role: 'user', content: 'written before encryption' }]);
      const head = await appendSegment(dir, plainHead, [{ role: 'user', content: CANARY }], keys);
      const files = await fs.readdir(dir, { recursive: true, withFileTypes: true });
      const texts = await Promise.all(files.filter((f) => f.isFile()).map((f) => fs.readFile(path.join(f.parentPath, f.name), 'utf8')));
      expect(texts.join('\n')).not.toContain('canary');
      expect(texts.join('\n')).toContain('written before encryption');
      clearSegmentCache();
      expect(await readConversation(dir, head, keys)).toEqual([
        { role: 'user', content: 'written before encryption' },
        { role: 'user', content: CANARY },
      ]);
      clearSegmentCache();
      await expect(readConversation(dir, head, null)).rejects.toThrow(/is encrypted, and this worker has no KEEL_ENCRYPTION_KEYS/);
      clearSegmentCache();
      await expect(readConversation(dir, head, await parseKeys(generateKeyLine('k9'), 'test'))).rejects.toThrow(/key "k1"/);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});
