// The checkpoint activities on a real directory and a local store (activities/workspace-checkpoint.ts):
// only what changed is stored, links out of the workspace are neither followed nor kept,
// a restore never writes through a link planted in the workspace nor touches .keel/ or .git/.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { CHECKPOINT_PROGRESS, checkpointWorkspace, restoreWorkspace, type CheckpointResult } from '../../activities/workspace-checkpoint';
import { DEFAULT_CHECKPOINT_LIMITS } from '../../machines/checkpoint-budget';

/** A string matching `re`, inside an expected object. */
const matching = (re: RegExp): string => expect.stringMatching(re) as string;

let root: string;
let ws: string;
let store: string;
let outside: string;
const env = {} as NodeJS.ProcessEnv;
const limits = { ...DEFAULT_CHECKPOINT_LIMITS, maxFileBytes: 1000 };
const take = (previous: string | null, usedBytes = 0) => checkpointWorkspace({ store, workspace: ws, previous, conversation: { head: null, append: [] }, limits, usedBytes }, env);

beforeEach(async () => {
  root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-cp-')));
  ws = path.join(root, 'ws');
  store = path.join(root, 'store');
  outside = path.join(root, 'outside');
  await fs.mkdir(path.join(ws, 'src'), { recursive: true });
  await fs.mkdir(outside);
  await fs.writeFile(path.join(outside, 'secret.txt'), 'secret');
  await fs.writeFile(path.join(ws, 'src', 'a.ts'), 'a');
  await fs.writeFile(path.join(ws, 'b.txt'), 'b');
});
afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

describe('workspace checkpoints', () => {
  it('the first keeps every file, the next only what changed', async () => {
    const first = await take(null);
    expect(first).toMatchObject({ files: 2, changed: 2, removed: 0, incomplete: null });
    await fs.writeFile(path.join(ws, 'b.txt'), 'b2');
    await fs.rm(path.join(ws, 'src', 'a.ts'));
    const second = await take(first.manifest);
    expect(second).toMatchObject({ files: 1, changed: 1, removed: 1 });
    // One new blob of 2 bytes and a small manifest.
    expect(second.storedBytes).toBeLessThan(400);
    const same = await take(second.manifest);
    expect(same).toMatchObject({ manifest: second.manifest, changed: 0, removed: 0, storedBytes: 0 });
  });

  it('a link out of the workspace is neither followed nor kept, and says so', async () => {
    await fs.symlink(outside, path.join(ws, 'out-dir'));
    await fs.symlink('/etc/hostname', path.join(ws, 'out-file'));
    await fs.symlink('b.txt', path.join(ws, 'in-link'));
    const r = await take(null);
    expect(r.skipped.map((s) => s.path).sort()).toEqual(['out-dir', 'out-file']);
    expect(r.skipped[0]!.reason).toMatch(/outside the workspace: not followed and not kept/);
    const fresh = path.join(root, 'fork');
    await restoreWorkspace({ store, workspace: fresh, manifest: r.manifest, mode: 'fresh' }, env);
    expect((await fs.readdir(fresh)).sort()).toEqual(['.keel', 'b.txt', 'in-link', 'src']);
    expect(await fs.readlink(path.join(fresh, 'in-link'))).toBe('b.txt');
  });

  it("a fork's workspace must be new: an existing directory with files is refused, its own half-done one is finished", async () => {
    const r = await take(null);
    const mine = path.join(root, 'mine');
    await fs.mkdir(mine);
    await fs.writeFile(path.join(mine, 'precious.txt'), 'keep me');
    await expect(restoreWorkspace({ store, workspace: mine, manifest: r.manifest, mode: 'fresh' }, env)).rejects.toThrow(/already exists and is not empty/);
    expect(await fs.readFile(path.join(mine, 'precious.txt'), 'utf8')).toBe('keep me');
    const fork = path.join(root, 'fork');
    await restoreWorkspace({ store, workspace: fork, manifest: r.manifest, mode: 'fresh' }, env);
    await fs.rm(path.join(fork, 'b.txt'));
    // A retry of the same restore finds its own mark and completes the layout.
    expect(await restoreWorkspace({ store, workspace: fork, manifest: r.manifest, mode: 'fresh' }, env)).toMatchObject({ written: 1 });
  });

  it("a fork's workspace replaced by a link (to an empty directory outside) is refused: nothing is laid out or marked there", async () => {
    const r = await take(null);
    const empty = path.join(root, 'empty-outside');
    await fs.mkdir(empty);
    const fork = path.join(root, 'fork-link');
    await fs.symlink(empty, fork);
    await expect(restoreWorkspace({ store, workspace: fork, manifest: r.manifest, mode: 'fresh' }, env)).rejects.toThrow(/symlink/);
    expect(await fs.readdir(empty)).toEqual([]);
  });

  it('a file over the limit is not kept, by name and size', async () => {
    await fs.writeFile(path.join(ws, 'big.bin'), Buffer.alloc(5000));
    const r = await take(null);
    expect(r.skipped).toEqual([{ path: 'big.bin', reason: matching(/^big\.bin: 0\.0 MiB is over the checkpoint limit of 0\.0 MiB per file/) }]);
    // Untouched since: not reported again.
    expect((await take(r.manifest)).skipped).toEqual([]);
  });

  it('a restore in place writes through no planted link and leaves .keel/ and .git/ alone', async () => {
    await fs.mkdir(path.join(ws, '.keel'), { recursive: true });
    await fs.writeFile(path.join(ws, '.keel', 'policy.json'), '{"mode":"ask"}');
    const r = await take(null);
    // The agent replaces src/ with a link to a directory outside, and changes Keel's state.
    await fs.rm(path.join(ws, 'src'), { recursive: true });
    await fs.symlink(outside, path.join(ws, 'src'));
    await fs.writeFile(path.join(ws, '.keel', 'policy.json'), '{"mode":"full-auto"}');
    await fs.writeFile(path.join(ws, 'new.txt'), 'new');
    const restored = await restoreWorkspace({ store, workspace: ws, manifest: r.manifest, mode: 'in_place' }, env);
    expect(restored).toMatchObject({ written: 1, removed: 1 });
    expect(await fs.readdir(outside)).toEqual(['secret.txt']);
    expect((await fs.lstat(path.join(ws, 'src'))).isDirectory()).toBe(true);
    expect(await fs.readFile(path.join(ws, 'src', 'a.ts'), 'utf8')).toBe('a');
    await expect(fs.stat(path.join(ws, 'new.txt'))).rejects.toThrow();
    // Never restored over: the protected state stays as it is now.
    expect(await fs.readFile(path.join(ws, '.keel', 'policy.json'), 'utf8')).toBe('{"mode":"full-auto"}');
  });

  it('a scan bounded by files says the checkpoint is incomplete and removes nothing', async () => {
    for (let i = 0; i < 20; i++) await fs.writeFile(path.join(ws, `f${i}.txt`), String(i));
    const full = await take(null);
    const r = await checkpointWorkspace({ store, workspace: ws, previous: full.manifest, conversation: { head: null, append: [] }, limits: { ...limits, maxFiles: 5 }, usedBytes: 0 }, env);
    expect(r.incomplete).toMatch(/more than 5 files \(checkpoints\.maxFiles\)/);
    expect(r.removed).toBe(0);
    expect(r.files).toBe(22);
  });

  it('a file rewritten with the same size and its mtime set back is still seen (inode and ctime), and one untouched is not read again', async () => {
    const first = await take(null);
    const a = path.join(ws, 'src', 'a.ts');
    const { atime, mtime } = await fs.stat(a);
    // Replaced by a rename, same size, its old mtime put back (what `cp -p`, `tar x` or `rsync -t` do).
    await fs.writeFile(`${a}.new`, 'A');
    await fs.rename(`${a}.new`, a);
    await fs.utimes(a, atime, mtime);
    const second = await take(first.manifest);
    expect(second.changed).toBe(1);
    expect(second.read).toBeLessThanOrEqual(2);
    const fork = path.join(root, 'fork');
    await restoreWorkspace({ store, workspace: fork, manifest: second.manifest, mode: 'fresh' }, env);
    expect(await fs.readFile(path.join(fork, 'src', 'a.ts'), 'utf8')).toBe('A');
  });

  it("small files' contents go into packs: a first checkpoint of 2,000 files writes a handful of objects, and a fork gets every file back", async () => {
    for (let d = 0; d < 20; d++) {
      await fs.mkdir(path.join(ws, 'many', `d${d}`), { recursive: true });
      await Promise.all(Array.from({ length: 100 }, (_, f) => fs.writeFile(path.join(ws, 'many', `d${d}`, `f${f}.txt`), `${d}/${f}`)));
    }
    const first = await take(null);
    expect(first.files).toBe(2002);
    const objects = async (kind: string) => (await fs.readdir(path.join(store, kind), { recursive: true }).catch(() => [])).filter((f) => /[0-9a-f]{64}$/.test(f)).length;
    expect(await objects('blobs')).toBe(0);
    expect(await objects('packs')).toBe(1);
    const fork = path.join(root, 'fork');
    expect((await restoreWorkspace({ store, workspace: fork, manifest: first.manifest, mode: 'fresh' }, env)).written).toBe(2002);
    expect(await fs.readFile(path.join(fork, 'many', 'd7', 'f42.txt'), 'utf8')).toBe('7/42');
    // The fork's first checkpoint reads none of what the restore wrote.
    expect((await checkpointWorkspace({ store, workspace: fork, previous: first.manifest, conversation: { head: null, append: [] }, limits, usedBytes: 0 }, env)).read).toBe(0);
  });

  it('a checkpoint cut short goes on from the progress its heartbeats carry: files it read are not read again', async () => {
    const count = 1050;
    for (let d = 0; d < 21; d++) {
      await fs.mkdir(path.join(ws, 'bulk', `d${d}`), { recursive: true });
      await Promise.all(Array.from({ length: 50 }, (_, f) => fs.writeFile(path.join(ws, 'bulk', `d${d}`, `f${f}.txt`), `${d}/${f}`)));
    }
    // Progress saved every 200 files (20,000 in a worker).
    CHECKPOINT_PROGRESS.everyFiles = 200;
    onTestFinished(() => {
      CHECKPOINT_PROGRESS.everyFiles = 20_000;
    });
    const beats: unknown[] = [];
    const first = new MockActivityEnvironment();
    first.on('heartbeat', (d: unknown) => beats.push(d));
    const whole = await first.run<[], CheckpointResult, () => Promise<CheckpointResult>>(() => take(null));
    expect(whole.read).toBe(count + 2);
    const partial = beats.map((b) => (b as { partial?: string | null }).partial).find((p) => typeof p === 'string');
    expect(partial).toBeDefined();
    // A retry (another worker: no stat cache for this directory) with the first attempt's heartbeat details.
    const again = new MockActivityEnvironment({ heartbeatDetails: beats.at(-1) });
    const otherStore = path.join(root, 'store');
    const retried = await again.run<[], CheckpointResult, () => Promise<CheckpointResult>>(() => checkpointWorkspace({ store: otherStore, workspace: ws, previous: null, conversation: { head: null, append: [] }, limits, usedBytes: 0 }, env));
    expect(retried.read).toBeLessThan(200);
    expect(retried.manifest).toBe(whole.manifest);
  });
});
