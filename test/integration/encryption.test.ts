// Encryption on, end to end: a real worker and client sharing KEEL_ENCRYPTION_KEYS, a real
// session and model stand-in. A canary sent to the session is readable through Keel and
// through `temporal workflow show --codec-endpoint`, and nowhere in the raw history nor in
// the conversation store's files.
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { resolveTemporalCli } from '../../worker/dev-server';
import { generateKeyLine, keelDataConverter } from '../../shared/encryption';
import { transcriptQuery, userMessageUpdate } from '../../workflows/definitions';
import { sessionWorkflow } from '../../workflows/session';
import { keelLive } from '../fixtures/client-cli';
import { say, sessionEnv } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const run = promisify(execFile);

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await fs.readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

/** Every `data` field of a history in JSON form, base64-decoded, and the JSON itself. */
function readable(json: string): string {
  const out: string[] = [json];
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object')
      for (const [k, x] of Object.entries(v)) {
        if (k === 'data' && typeof x === 'string') out.push(Buffer.from(x, 'base64').toString('latin1'));
        else walk(x);
      }
  };
  walk(JSON.parse(json));
  return out.join('\n');
}
const CANARY = 'CANARY-b41e9 the launch code is 0000';

const { env, workflowBundle } = useTemporal();

describe('encrypted payloads', () => {
  it('keeps a canary out of the raw history; Keel and the codec server read it back', async () => {
    const keys = { KEEL_ENCRYPTION_KEYS: generateKeyLine('k1') };
    const s = await sessionEnv(env, workflowBundle, { rules: [{ match: { lastUserContains: 'CANARY' }, reply: say(`Noted: ${CANARY}`) }] }, keys);
    const secure = new Client({ connection: env.client.connection, namespace: env.namespace, dataConverter: await keelDataConverter(keys) });
    // The real `keel codec-server`, as an operator starts it.
    const token = 'codec-token-for-the-test-0123';
    const codecServer = keelLive(['codec-server', '--port', '0'], { ...process.env, ...keys, KEEL_CODEC_TOKEN: token, NO_COLOR: '1' });
    try {
      const codecUrl = (await codecServer.waitFor(/keel codec-server: (http:\/\/\S+)/))[1]!;
      await s.run(async () => {
        const id = `${s.taskQueue}-enc`;
        const handle = await secure.workflow.start(sessionWorkflow, { taskQueue: s.taskQueue, workflowId: id, args: [{ workspace: s.workspace, policy: { mode: 'full-auto' } }] });
        await handle.executeUpdate(userMessageUpdate, { args: [{ text: `remember ${CANARY}` }] });
        await expect.poll(async () => (await handle.query(transcriptQuery)).messages.length, { timeout: 30_000 }).toBeGreaterThanOrEqual(2);
        const transcript = JSON.stringify(await handle.query(transcriptQuery));
        expect(transcript).toContain(`Noted: ${CANARY}`);

        // The raw history, read by a client with no codec: not a trace of the canary.
        const cli = await resolveTemporalCli('path');
        const args = ['workflow', 'show', '-w', id, '--address', env.address, '--namespace', env.namespace, '-o', 'json'];
        const raw = readable((await run(cli, args, { maxBuffer: 64 * 1024 * 1024 })).stdout);
        expect(raw).toContain(Buffer.from('binary/encrypted').toString('base64'));
        expect(raw).not.toContain('CANARY');

        // Nor in the conversation store's files, which hold every message of the session.
        const storeFiles = await filesUnder(path.join(s.workspace, '.keel', 'store'));
        expect(storeFiles.length).toBeGreaterThan(0);
        for (const file of storeFiles) expect(await fs.readFile(file, 'latin1'), file).not.toContain('CANARY');

        const decoded = readable((await run(cli, [...args, '--codec-endpoint', codecUrl, '--codec-auth', `Bearer ${token}`], { maxBuffer: 64 * 1024 * 1024 })).stdout);
        expect(decoded).toContain(`remember ${CANARY}`);
        expect(decoded).not.toContain(Buffer.from('binary/encrypted').toString('base64'));

        // The same payloads, asked for the way others might: only the token holder, from no
        // browser or the Web UI's origin, with JSON, reads them.
        const sealed = (JSON.parse((await run(cli, args, { maxBuffer: 64 * 1024 * 1024 })).stdout) as { events: { workflowExecutionUpdateAcceptedEventAttributes?: { acceptedRequest?: { input?: { args?: { payloads: unknown[] } } } } }[] }).events
          .map((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.args?.payloads)
          .find((p) => p !== undefined)!;
        expect(sealed).toBeDefined();
        const body = JSON.stringify({ payloads: sealed });
        const ask = (route: string, headers: Record<string, string>, b = body) => fetch(`${codecUrl}${route}`, { method: 'POST', headers, body: b });
        const json = { 'content-type': 'application/json' };
        const noToken = await ask('/decode', json);
        expect(noToken.status).toBe(401);
        expect(await noToken.text()).not.toContain('CANARY');
        expect((await ask('/decode', { ...json, authorization: 'Bearer not-the-token-0000000' })).status).toBe(401);
        const evil = await ask('/decode', { ...json, authorization: `Bearer ${token}`, origin: 'http://evil.example' });
        expect(evil.status).toBe(403);
        expect(await evil.text()).not.toContain('CANARY');
        expect((await ask('/decode', { 'content-type': 'text/plain', authorization: `Bearer ${token}` })).status).toBe(415);
        expect((await ask('/decode', { ...json, authorization: `Bearer ${token}` }, '{"payloads":[{"data":"%%"}]}')).status).toBe(400);
        const ok = await ask(`/${token}/decode`, { ...json, origin: 'http://localhost:8233', 'x-namespace': env.namespace });
        expect(ok.status).toBe(200);
        expect(ok.headers.get('access-control-allow-origin')).toBe('http://localhost:8233');
        expect(readable(await ok.text())).toContain(`remember ${CANARY}`);
        await handle.terminate('test over');
      });
    } finally {
      codecServer.child.kill('SIGTERM');
    }
  });
});
