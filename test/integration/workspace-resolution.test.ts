// Workspaces are resolved once, by the real path, when a session starts through the API or
// the SDK. On main `POST /api/sessions {"workspace":"ws/link-to-etc"}` was accepted (the
// agent listed /etc and Keel created /etc/.keel/store), and a missing workspace failed
// later with a raw ENOENT. Real API routes (in process) and a real worker.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../client/errors';
import { KeelClient } from '../../client/keel-client';
import { openWorkspace } from '../../activities/tools/workspace';
import { createApp } from '../../server/app';
import { createHash } from 'node:crypto';
import { stateQuery } from '../../workflows/definitions';
import { say, sessionEnv, waitUntil } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();

const TOKEN = 'keel_workspace_test_token_0123456789';
type Problem = { status: number; detail: string; errors?: { pointer: string; message: string }[] };

describe('workspace resolution', () => {
  it('refuses a symlink out of the root and a missing directory with a 400 naming the field; accepts the real path of a link inside; creates only on request', async () => {
    const s = await sessionEnv(env, workflowBundle, { rules: [{ reply: say('ok') }] });
    const root = s.workspace;
    const elsewhere = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-elsewhere-')));
    await fs.symlink('/etc', path.join(root, 'link-to-etc'));
    await fs.symlink(elsewhere, path.join(root, 'link-out'));
    await fs.mkdir(path.join(root, 'real-sub'));
    await fs.symlink('real-sub', path.join(root, 'link-in'));
    const keel = await KeelClient.connect({ client: env.client, taskQueue: s.taskQueue });
    const app = createApp({ keel, tokens: [{ name: 'ada (API token)', sha256: createHash('sha256').update(TOKEN).digest() }], workspace: root });
    const post = (body: unknown) =>
      app.request('/api/sessions', { method: 'POST', headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    try {
      await s.run(async () => {
        for (const [workspace, detail] of [
          ['link-to-etc', /^workspace link-to-etc resolves outside the server's workspace root/],
          ['link-out', /outside/],
          ['link-to-etc/ssl', /outside/],
          ['missing/dir', /does not exist/],
        ] as const) {
          const res = await post({ workspace });
          expect(res.status, workspace).toBe(400);
          const problem = (await res.json()) as Problem;
          expect(problem.detail, workspace).toMatch(detail);
          expect(problem.errors?.map((e) => e.pointer)).toEqual(['/body/workspace']);
          // The server's own paths stay on the server: neither its root nor where a link leads.
          for (const secret of [root, elsewhere, '/etc']) expect(JSON.stringify(problem), workspace).not.toContain(secret);
        }
        for (const [body, detail] of [
          [{ workspace: 'link-out/new', createWorkspace: true }, /^workspace link-out\/new would be created outside the server's workspace root/],
        ] as const) {
          const problem = (await (await post(body)).json()) as Problem;
          expect(problem.detail).toMatch(detail);
          for (const secret of [root, path.dirname(root), elsewhere]) expect(JSON.stringify(problem)).not.toContain(secret);
        }
        await expect(fs.stat('/etc/.keel')).rejects.toThrow(/ENOENT/);
        await expect(fs.stat(path.join(root, 'missing'))).rejects.toThrow(/ENOENT/);
        // createWorkspace through a link out is still refused; inside, it creates the directory.
        expect((await post({ workspace: 'link-out/new', createWorkspace: true })).status).toBe(400);
        expect(await fs.readdir(elsewhere)).toEqual([]);
        const created = await post({ workspace: 'made/here', createWorkspace: true });
        expect(created.status).toBe(201);
        expect((await fs.stat(path.join(root, 'made/here'))).isDirectory()).toBe(true);

        // A link inside is accepted, and the session gets the real path (pinned: a later swap of the link changes nothing).
        const res = await post({ workspace: 'link-in' });
        expect(res.status).toBe(201);
        const { id } = (await res.json()) as { id: string };
        const handle = env.client.workflow.getHandle(id);
        await waitUntil(() => handle.query(stateQuery), (v) => v.status === 'active', 30_000, 'session active');
        const history = await handle.fetchHistory();
        const started = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0]?.data;
        expect(JSON.parse(Buffer.from(started ?? []).toString('utf8'))).toMatchObject({ workspace: path.join(root, 'real-sub') });
        await handle.terminate('test over');
        await fs.rm(elsewhere, { recursive: true, force: true });
      });
    } finally {
      await fs.rm(elsewhere, { recursive: true, force: true });
    }

    // The SDK: the same rule without a root; a refusal names the option.
    const sdk = KeelClient.connect({ client: env.client, taskQueue: 'nowhere' });
    const refusal = await (await sdk).startSession({ workspace: path.join(os.tmpdir(), 'keel-does-not-exist-xyz') }).catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(InvalidInputError);
    expect((refusal as InvalidInputError).problems.join('\n')).toMatch(/^workspace: .*does not exist/);
  }, 90_000);

  it('a workspace is pinned: once a part of its path is swapped for a symlink, the tools refuse it', async () => {
    const base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-pin-')));
    try {
      await fs.mkdir(path.join(base, 'ws'));
      expect((await openWorkspace(path.join(base, 'ws'))).root).toBe(path.join(base, 'ws'));
      await fs.rename(path.join(base, 'ws'), path.join(base, 'ws-old'));
      await fs.symlink('/etc', path.join(base, 'ws'));
      await expect(openWorkspace(path.join(base, 'ws'))).rejects.toThrow(/now resolves to \/etc[^]*pinned/);
    } finally {
      await fs.rm(base, { recursive: true, force: true });
    }
  });
});
