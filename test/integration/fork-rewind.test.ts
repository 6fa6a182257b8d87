// Fork and rewind (docs/fork-and-rewind.md) end to end: a real worker and dev server, the
// stand-in model, real tools. A four-turn session writes, deletes and changes files with
// write_file and run_command; forks at turns 1 and 3 and a fork of a fork have the parent's
// files at that turn (compared file by file, modes included) and its conversation (the fork's
// first model call is sent exactly the parent's messages up to the turn); the parent is
// untouched; a rewind to turn 2 restores the files and the conversation, keeps the later turns
// aside, and is refused when not proven (a call from outside Keel's clients, as a command the
// model ran would be). Once with the local store, once with PostgreSQL.
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeelClient } from '../../client/keel-client';
import { CheckpointError } from '../../client/checkpoints';
import { UpdateRejectedError } from '../../client/errors';
import type { Message } from '../../machines/index';
import { keelDataConverter } from '../../shared/encryption';
import { rewindUpdate } from '../../workflows/protocol/checkpoints';
import { recordHistory, say, sessionEnv, use } from '../fixtures/session-harness';
import { cliEnv, keel as keelCli } from '../fixtures/client-cli';
import { createApp } from '../../server/app';
import type { ForkResult } from '../../client/session-fork';
import { useTemporal } from '../fixtures/use-temporal';
import { startPostgres, type TestPostgres } from '../helpers/postgres';

/** A string matching `re`, inside an expected object. */
const matching = (re: RegExp): string => expect.stringMatching(re) as string;

const { env, workflowBundle } = useTemporal();

type Files = Record<string, string>;

/** Every file and link under `dir` but Keel's and git's own state: path → content (and whether executable). */
async function filesOf(dir: string): Promise<Files> {
  const out: Files = {};
  for (const entry of await fs.readdir(dir, { recursive: true, withFileTypes: true })) {
    const full = path.join(entry.parentPath, entry.name);
    const rel = path.relative(dir, full);
    if (rel.split(path.sep).some((s) => s === '.keel' || s === '.git')) continue;
    if (entry.isSymbolicLink()) out[rel] = `link:${await fs.readlink(full)}`;
    else if (entry.isFile()) out[rel] = `${((await fs.stat(full)).mode & 0o111) !== 0 ? 'x' : '-'}:${await fs.readFile(full, 'utf8')}`;
  }
  return out;
}

const rules = [
  { match: { lastUserContains: 'STEP1', hasToolResults: false }, reply: use('write_file', { path: 'a.txt', content: 'alpha\n' }) },
  { match: { lastUserContains: 'STEP2', hasToolResults: false }, reply: use('run_command', { command: 'printf beta > b.txt && chmod +x b.txt && mkdir -p sub && printf why > sub/y.txt && ln -s a.txt link-in && ln -s /etc/hostname link-out' }) },
  { match: { lastUserContains: 'STEP3', hasToolResults: false }, reply: use('run_command', { command: 'rm a.txt sub/y.txt && printf beta2 > b.txt' }) },
  { match: { lastUserContains: 'STEP4', hasToolResults: false }, reply: use('write_file', { path: 'a.txt', content: 'alpha again\n' }) },
  { match: { hasToolResults: true }, reply: say('done') },
  { match: { lastUserContains: 'FORK' }, reply: say('forked reply') },
  { match: { lastUserContains: 'AFTER' }, reply: say('after rewind') },
];

/** The HTTP API in process (server/app.ts), with one token whose holder is `ann`. */
function api(keel: KeelClient, workspace: string) {
  const app = createApp({ keel, tokens: [{ name: 'ann', sha256: createHash('sha256').update('keel-fork-test-token').digest() }], workspace });
  return async (method: 'GET' | 'POST', url: string, body?: unknown) => {
    const res = await app.request(url, { method, headers: { authorization: 'Bearer keel-fork-test-token', 'content-type': 'application/json' }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    const text = await res.text();
    return { status: res.status, body: (res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : { text }) as Record<string, unknown> };
  };
}

async function scenario(extraEnv: NodeJS.ProcessEnv, surfaces: boolean): Promise<void> {
  const s = await sessionEnv(env, workflowBundle, { rules }, extraEnv);
  await s.run(async () => {
    // Keel's client proves a human's rewind with the approver key (shared/approver-proof.ts), as the worker checks it.
    const proving = new Client({ connection: env.client.connection, namespace: env.namespace, dataConverter: await keelDataConverter({ ...process.env, ...extraEnv }) });
    const keel = await KeelClient.connect({ client: proving, taskQueue: s.taskQueue });
    // Continues as new every two turns: boundaries, forks and the rewind cross runs.
    const run = await s.start({ checkpoints: { maxFileBytes: 1024 }, continueAsNewAfterTurns: 2 });
    const parent = keel.getSession(run.handle.workflowId);
    // A file over the per-file limit from the start: not kept, and said so.
    await fs.writeFile(path.join(s.workspace, 'big.bin'), Buffer.alloc(4096, 7));
    const atTurn: Files[] = [];
    await run.waitForState((v) => v.status === 'active');
    for (const step of ['STEP1', 'STEP2', 'STEP3', 'STEP4']) {
      const outcome = await parent.send(step);
      expect(outcome.outcome).toBe('completed');
      atTurn.push(await filesOf(s.workspace));
    }
    const view = await parent.checkpoints();
    expect(view.turns.map((t) => t.turn)).toEqual([0, 1, 2, 3, 4]);
    expect(view.turns[0]!.skipped.map((x) => x.path)).toEqual(['big.bin']);
    expect(view.turns[0]!.skipped[0]!.reason).toMatch(/big\.bin: 4\.0 KiB|over the checkpoint limit/);
    expect(view.turns[2]!.skipped.map((x) => x.path)).toContain('link-out');
    expect(atTurn[1]!['link-in']).toBe('link:a.txt');

    // Cache breakpoints move with the conversation's end (activities/llm-cache.ts): compared without them.
    const plain = (messages: Message[]): Message[] => JSON.parse(JSON.stringify(messages, (k, v: unknown) => (k === 'cache_control' ? undefined : v))) as Message[];
    const parentRequests = () => s.standin.requests.map((r) => ({ messages: plain((r.body as { messages: Message[] }).messages) }));
    /** The messages the parent's model was sent at the first call of turn n+1 (the conversation up to turn n, then its message). */
    const sentBefore = (marker: string) => parentRequests().find((b) => JSON.stringify(b.messages.at(-1)).includes(marker))!.messages.slice(0, -1);
    const parentFiles = await filesOf(s.workspace);

    // Forks at turns 1 and 3: files as they were then (big.bin never kept: absent), conversation up to there.
    const forkFiles = (files: Files) => Object.fromEntries(Object.entries(files).filter(([p]) => p !== 'big.bin' && p !== 'link-out'));
    const f1 = await keel.forkSession(parent.id, { atTurn: 1 });
    const f3 = await keel.forkSession(parent.id, { atTurn: 3 });
    expect(f1.workspace).not.toBe(s.workspace);
    const first1 = await f1.session.send('FORK one');
    expect(first1.output).toBe('forked reply');
    await f3.session.send('FORK three');
    expect(await filesOf(f1.workspace)).toEqual(forkFiles(atTurn[0]!));
    expect(await filesOf(f3.workspace)).toEqual(forkFiles(atTurn[2]!));
    const sentTo = (marker: string) => parentRequests().find((b) => JSON.stringify(b.messages.at(-1)).includes(marker))!.messages;
    expect(sentTo('FORK one').slice(0, -1)).toEqual(sentBefore('STEP2'));
    expect(sentTo('FORK three').slice(0, -1)).toEqual(sentBefore('STEP4'));
    expect((await f1.session.checkpoints()).forkOf).toEqual({ sessionId: parent.id, turn: 1 });
    // Same system, tools and model, the same messages: the fork's first call reads the parent's cached prefix.
    const forkCall = s.standin.requests.find((r) => JSON.stringify((r.body as { messages: Message[] }).messages.at(-1)).includes('FORK three'))!;
    expect(forkCall.usage?.cache_read_input_tokens ?? 0).toBeGreaterThan(0);

    // A fork of a fork: at its own turn 2 (its fork point's turn 1 + the FORK turn), and at a turn before its start (asked of its parent).
    const ff = await keel.forkSession(f1.id, { atTurn: 2 });
    await ff.session.send('FORK of fork');
    expect(await filesOf(ff.workspace)).toEqual(forkFiles(atTurn[0]!));
    expect(sentTo('FORK of fork').slice(0, -1)).toEqual(sentTo('FORK one').concat([{ role: 'assistant', content: [{ type: 'text', text: 'forked reply' }] }] as Message[]));
    const before = await keel.forkSession(f3.id, { atTurn: 2 });
    await before.session.send('FORK before');
    expect(await filesOf(before.workspace)).toEqual(forkFiles(atTurn[1]!));
    await expect(keel.forkSession(parent.id, { atTurn: 9 })).rejects.toBeInstanceOf(CheckpointError);

    const forks = [f1, f3, ff, before];
    if (surfaces) {
      // The HTTP API and the CLI offer the same fork.
      const http = api(keel, s.workspace);
      const viaHttp = await http('POST', `/api/sessions/${parent.id}/fork`, { atTurn: 2 });
      expect(viaHttp.status).toBe(201);
      const httpFork = viaHttp.body as { id: string; workspace: string };
      forks.push({ workspace: httpFork.workspace } as ForkResult);
      await keel.getSession(httpFork.id).send('FORK http');
      expect(await filesOf(httpFork.workspace)).toEqual(forkFiles(atTurn[1]!));
      expect(await http('POST', `/api/sessions/${parent.id}/rewind`, { toTurn: 9 })).toMatchObject({ status: 409, body: { code: 'no_checkpoint' } });
      expect((await http('GET', `/api/sessions/${parent.id}/checkpoints`)).body).toMatchObject({ enabled: true, turns: [{ turn: 0 }, { turn: 1 }, { turn: 2 }, { turn: 3 }, { turn: 4 }] });
      // The diff between two turns (the console's), read on the workspace's host: what the files say.
      const one = forkFiles(atTurn[0]!);
      const two = forkFiles(atTurn[1]!);
      const expected = {
        added: Object.keys(two).filter((p) => !(p in one)).sort(),
        removed: Object.keys(one).filter((p) => !(p in two)).sort(),
        changed: Object.keys(two).filter((p) => p in one && one[p] !== two[p]).sort(),
      };
      expect(expected.added.length + expected.removed.length + expected.changed.length).toBeGreaterThan(0);
      expect(await parent.diff(1, 2)).toEqual(expected);
      expect(await http('GET', `/api/sessions/${parent.id}/diff?from=1&to=2`)).toEqual({ status: 200, body: expected });
      expect(await http('GET', `/api/sessions/${parent.id}/diff?from=1&to=9`)).toMatchObject({ status: 409, body: { code: 'no_checkpoint' } });
      // AG-UI: a new thread branched from a message of the session (its turn 1's reply): on its first run its session is a fork.
      const thread = `branch-${parent.id.slice(-8)}`;
      const message = `${parent.id}-m3`;
      const agui = await http('POST', '/api/ag-ui', { threadId: thread, runId: 'r1', messages: [{ id: 'u1', role: 'user', content: 'FORK agui' }], forwardedProps: { keel: { forkOf: { sessionId: parent.id, messageId: message } } } });
      expect(agui.status).toBe(200);
      expect(String(agui.body.text)).toContain('forked reply');
      const branch = await keel.getSession(`agui-${thread}`).checkpoints();
      expect(branch.forkOf).toEqual({ sessionId: parent.id, turn: 1 });
      const branchWorkspace = String(branch.base.options.workspace);
      forks.push({ workspace: branchWorkspace } as ForkResult);
      expect(await filesOf(branchWorkspace)).toEqual(forkFiles(atTurn[0]!));
      expect(sentTo('FORK agui').slice(0, -1)).toEqual(sentBefore('STEP2'));
      expect(await http('POST', '/api/ag-ui', { threadId: 'branch-bad', runId: 'r1', messages: [], forwardedProps: { keel: { forkOf: { sessionId: parent.id } } } })).toMatchObject({ status: 400 });
      const cli = await keelCli(['session', 'fork', parent.id, '--at', '4', '--json'], cliEnv(s.taskQueue));
      expect(cli.code).toBe(0);
      const cliFork = cli.json<{ id: string; workspace: string }>();
      forks.push({ workspace: cliFork.workspace } as ForkResult);
      await keel.getSession(cliFork.id).send('FORK cli');
      expect(await filesOf(cliFork.workspace)).toEqual(forkFiles(atTurn[3]!));
    }

    // The parent is untouched by its forks.
    expect(await filesOf(s.workspace)).toEqual(parentFiles);
    expect((await parent.checkpoints()).turns).toHaveLength(5);

    // A rewind not proven by Keel's client (any other caller, a command the model runs) is refused.
    const unproven = await run.handle.executeUpdate(rewindUpdate, { args: [{ toTurn: 2, proven: true, approver: 'model' }] }).then(() => null, (e: Error) => e);
    expect(unproven?.cause).toMatchObject({ type: 'needs_human', message: matching(/needs a human/) });
    expect(await filesOf(s.workspace)).toEqual(parentFiles);

    // Rewind to turn 2: files as then, later turns set aside, the next message continues from turn 2's conversation.
    const rewound = await parent.rewind(2);
    expect(rewound).toMatchObject({ toTurn: 2, setAside: 2 });
    expect(await filesOf(s.workspace)).toEqual({ ...forkFiles(atTurn[1]!), 'big.bin': parentFiles['big.bin'], 'link-out': 'link:/etc/hostname' });
    await parent.send('AFTER the rewind');
    expect(sentTo('AFTER the rewind').slice(0, -1)).toEqual(sentBefore('STEP3'));
    const after = await parent.checkpoints();
    expect(after.turns.map((t) => t.turn)).toEqual([0, 1, 2, 3]);
    expect(after.rewound[0]!.checkpoints.map((t) => t.turn)).toEqual([3, 4]);
    // The turns set aside stay forkable by checkpoint id.
    const aside = await keel.forkSession(parent.id, { checkpointId: after.rewound[0]!.checkpoints[1]!.id });
    await aside.session.send('FORK aside');
    expect(await filesOf(aside.workspace)).toEqual(forkFiles(atTurn[3]!));
    // A turn with no checkpoint: refused, by code.
    await expect(parent.rewind(99)).rejects.toMatchObject({ constructor: UpdateRejectedError, code: 'no_checkpoint' });
    if (surfaces) {
      // A session started without checkpoints cannot be forked, and says why.
      const plainRun = await s.start({});
      await expect(keel.forkSession(plainRun.handle.workflowId, { atTurn: 0 })).rejects.toMatchObject({ code: 'checkpoints_off' });
      await recordHistory(run.handle, 'fork-rewind-parent-diff');
      await recordHistory(f1.session.workflowHandle, 'fork-rewind-fork');
    }
    for (const f of [...forks, aside]) await fs.rm(f.workspace, { recursive: true, force: true });
  });
}

describe('fork and rewind', () => {
  it('local store: forks at turns 1 and 3, a fork of a fork, a rewind to turn 2', async () => {
    await scenario({}, true);
  });

  describe('PostgreSQL store', () => {
    let pg: TestPostgres;
    beforeAll(async () => {
      pg = await startPostgres();
    });
    afterAll(async () => {
      await pg?.stop();
    });
    it('the same with KEEL_STORE_URL', async () => {
      await scenario({ KEEL_STORE_URL: await pg.createDatabase('keel_fork') }, false);
    });
  });
});
