// The acceptance run of fork and rewind (issue #49; docs/fork-and-rewind.md), `npm run
// test:e2e -- fork-rewind`: a 12-turn session in a workspace of 100,000 files that writes,
// deletes and changes files with write_file and run_command, continuing as new every 4
// turns; forks at turns 3, 7 and 12 and a fork of a fork have the parent's files at that
// turn (file by file, modes included) and its conversation (the fork's first call is sent
// the parent's messages up to the turn); a fork at the last finished turn while the parent's
// next turn runs works, and one at the running turn is refused; a rewind to turn 5 restores
// files and conversation; the parent is untouched by its forks. Turn 3 makes a file over the
// checkpoint limit (1 MiB here) and a link out of the workspace: neither is kept, both are
// named in the checkpoint's `skipped`, forks lack them and say so. A rewind the model asks
// for (an update not proven by Keel's client) is refused. Local store, then PostgreSQL.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CheckpointError } from '../../client/checkpoints';
import { KeelClient } from '../../client/keel-client';
import type { Message } from '../../machines/index';
import { keelDataConverter } from '../../shared/encryption';
import { rewindUpdate } from '../../workflows/protocol/checkpoints';
import { say, sessionEnv, use, waitUntil } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';
import { startPostgres, type TestPostgres } from '../helpers/postgres';

const { env, workflowBundle } = useTemporal();
const BULK = 100_000;

/** Every file and link but Keel's, git's and the bulk's (compared by a digest): path → content. */
async function filesOf(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const bulk = createHash('sha256');
  for (const entry of await fs.readdir(dir, { recursive: true, withFileTypes: true })) {
    const full = path.join(entry.parentPath, entry.name);
    const rel = path.relative(dir, full);
    if (rel.split(path.sep).some((s) => s === '.keel' || s === '.git')) continue;
    if (rel.startsWith(`bulk${path.sep}`)) {
      // 100,000 reads: synchronous ones (a promise each cost minutes at load 30; the test's own time, not Keel's).
      if (entry.isFile()) bulk.update(`${rel}\0${readFileSync(full, 'utf8')}\0`);
      continue;
    }
    if (entry.isSymbolicLink()) out[rel] = `link:${await fs.readlink(full)}`;
    else if (entry.isFile()) out[rel] = `${((await fs.stat(full)).mode & 0o111) !== 0 ? 'x' : '-'}:${await fs.readFile(full, 'utf8')}`;
  }
  out['(bulk digest)'] = bulk.digest('hex');
  return out;
}

const step = (k: number) => {
  // Each turn writes its own file, deletes the one from two turns before, changes a shared
  // file and one of the bulk files; odd turns by a command, even ones by write_file.
  const extra = k === 3 ? ' && head -c 2097152 /dev/zero > big.bin && ln -s /etc out-link' : k === 12 ? ' && while [ ! -f go ]; do sleep 0.05; done' : '';
  const command = `printf 'turn ${k}' > t${k}.txt && rm -f t${k - 2}.txt && printf '${k}' >> shared.txt && printf 'changed ${k}' > bulk/d${k}/f${k}.txt${extra}`;
  return k % 2 === 1 || k === 12 ? use('run_command', { command, timeout_seconds: 600 }) : use('write_file', { path: `t${k}.txt`, content: `written ${k}` });
};
const rules = [
  ...Array.from({ length: 12 }, (_, i) => ({ match: { lastUserContains: `STEP ${i + 1}.`, hasToolResults: false }, reply: step(i + 1) })),
  { match: { hasToolResults: true }, reply: say('done') },
  { match: { lastUserContains: 'FORK' }, reply: say('forked reply') },
  { match: { lastUserContains: 'AFTER' }, reply: say('after rewind') },
];

async function acceptance(extraEnv: NodeJS.ProcessEnv): Promise<void> {
  const s = await sessionEnv(env, workflowBundle, { rules }, extraEnv);
  await s.run(async () => {
    const proving = new Client({ connection: env.client.connection, namespace: env.namespace, dataConverter: await keelDataConverter({ ...process.env, ...extraEnv }) });
    const keel = await KeelClient.connect({ client: proving, taskQueue: s.taskQueue });
    for (let d = 0; d < 1000; d++) {
      await fs.mkdir(path.join(s.workspace, 'bulk', `d${d}`), { recursive: true });
      await Promise.all(Array.from({ length: BULK / 1000 }, (_, f) => fs.writeFile(path.join(s.workspace, 'bulk', `d${d}`, `f${f}.txt`), `${d}/${f}`)));
    }
    const run = await s.start({ checkpoints: { maxFileBytes: 1024 * 1024 }, continueAsNewAfterTurns: 4 });
    const parent = keel.getSession(run.handle.workflowId);
    const atTurn: Record<number, Record<string, string>> = {};
    const started = Date.now();
    for (let k = 1; k <= 11; k++) {
      const t = Date.now();
      expect((await parent.send(`STEP ${k}.`)).outcome).toBe('completed');
      console.log(`turn ${k}: ${Date.now() - t} ms (checkpoint of ${BULK.toLocaleString('en-US')} files included; ${k === 1 ? 'turn 0, the first checkpoint, before it: ' : ''}${Date.now() - started} ms since start)`);
      // Read back (100,000 files) only where a fork or the rewind is compared.
      if ([3, 5, 7, 11].includes(k)) atTurn[k] = await filesOf(s.workspace);
    }
    // Turn 12 waits for `go`: while it runs, a fork at turn 11 works and one at 12 is refused.
    const twelve = parent.send('STEP 12.');
    await waitUntil(async () => (await parent.state()).turn?.status ?? null, (status) => status !== null, 60_000, 'turn 12 running');
    await expect(keel.forkSession(parent.id, { atTurn: 12 })).rejects.toBeInstanceOf(CheckpointError);
    const during = await keel.forkSession(parent.id, { atTurn: 11 });
    await fs.writeFile(path.join(s.workspace, 'go'), '');
    expect((await twelve).outcome).toBe('completed');
    atTurn[12] = await filesOf(s.workspace);
    const parentFiles = atTurn[12];

    // Turn 3's file over the limit and link out: not kept, each named with its reason.
    const three = (await parent.checkpoints()).turns.find((c) => c.turn === 3)!;
    expect(three.skipped.map((x) => x.path).sort()).toEqual(['big.bin', 'out-link']);
    expect(three.skipped.find((x) => x.path === 'big.bin')!.reason).toMatch(/big\.bin: 2\.0 MiB is over the checkpoint limit of 1\.0 MiB per file \(checkpoints\.maxFileBytes\)/);
    expect(three.skipped.find((x) => x.path === 'out-link')!.reason).toMatch(/a symbolic link to \/etc, outside the workspace: not followed and not kept/);
    const kept = (files: Record<string, string>) => Object.fromEntries(Object.entries(files).filter(([p]) => p !== 'big.bin' && p !== 'out-link'));
    expect(atTurn[3]!['out-link']).toBe('link:/etc');

    const plain = (messages: Message[]): Message[] => JSON.parse(JSON.stringify(messages, (k, v: unknown) => (k === 'cache_control' ? undefined : v))) as Message[];
    const sentWith = (marker: string) => plain((s.standin.requests.find((r) => JSON.stringify((r.body as { messages: Message[] }).messages.at(-1)).includes(marker))!.body as { messages: Message[] }).messages);
    const withoutGo = (files: Record<string, string>) => Object.fromEntries(Object.entries(files).filter(([p]) => p !== 'go'));

    const forks = [during];
    for (const turn of [3, 7, 12]) {
      const t = Date.now();
      const fork = await keel.forkSession(parent.id, { atTurn: turn });
      await fork.session.send(`FORK at ${turn}`);
      console.log(`fork at ${turn}: ready and answered in ${Date.now() - t} ms`);
      forks.push(fork);
      // Everything but what was not kept (absent from the fork, named in its session.forked event).
      expect(await filesOf(fork.workspace)).toEqual(kept(atTurn[turn]!));
      if (turn < 12) expect(sentWith(`FORK at ${turn}`).slice(0, -1)).toEqual(sentWith(`STEP ${turn + 1}.`).slice(0, -1));
    }
    await during.session.send('FORK during');
    expect(withoutGo(await filesOf(during.workspace))).toEqual(withoutGo(kept(atTurn[11]!)));
    const ff = await keel.forkSession(forks[1]!.id, { atTurn: 4 });
    await ff.session.send('FORK of fork');
    expect(await filesOf(ff.workspace)).toEqual(kept(atTurn[3]!));
    forks.push(ff);
    expect(await filesOf(s.workspace)).toEqual(parentFiles);

    // The model cannot rewind: an update not proven by Keel's client (a command it runs, a raw client) is refused, nothing moves.
    const unproven = await run.handle.executeUpdate(rewindUpdate, { args: [{ toTurn: 5, proven: true, approver: 'model' }] }).then(() => null, (e: Error) => e);
    expect(unproven?.cause).toMatchObject({ type: 'needs_human' });
    expect((await parent.checkpoints()).turns.at(-1)!.turn).toBe(12);
    expect(await filesOf(s.workspace)).toEqual(parentFiles);

    const rewound = await parent.rewind(5);
    expect(rewound.setAside).toBe(7);
    // In place, what was not kept is left as it is (big.bin, out-link: as at turn 5 too).
    expect(await filesOf(s.workspace)).toEqual(atTurn[5]);
    console.log(`acceptance: ${Date.now() - started} ms`);
    await parent.send('AFTER rewind');
    expect(sentWith('AFTER rewind').slice(0, -1)).toEqual(sentWith('STEP 6.').slice(0, -1));
    for (const f of forks) await fs.rm(f.workspace, { recursive: true, force: true });
  });
}

describe('fork and rewind: acceptance', () => {
  it('12 turns, 100,000 files, continue-as-new: forks at 3, 7, 12, a fork of a fork, a fork during a turn, a rewind to 5 (local store)', { timeout: 7_200_000 }, async () => {
    await acceptance({});
  });

  describe('PostgreSQL', () => {
    let pg: TestPostgres;
    beforeAll(async () => {
      pg = await startPostgres();
    });
    afterAll(async () => {
      await pg?.stop();
    });
    it('the same with KEEL_STORE_URL', { timeout: 7_200_000 }, async () => {
      await acceptance({ KEEL_STORE_URL: await pg.createDatabase('keel_fork_e2e') });
    });
  });
});
