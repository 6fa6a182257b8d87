// The checkpoint activities on a real directory and a local store (activities/workspace-checkpoint.ts):
// only what changed is stored, links out of the workspace are neither followed nor kept,
// a restore never writes through a link planted in the workspace nor touches .keel/ or .git/.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkpointWorkspace, restoreWorkspace } from '../../activities/workspace-checkpoint';
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
});
