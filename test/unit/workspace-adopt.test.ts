// `keel host move --files copy` lays a workspace out on the new host (activities/workspace-adopt.ts).
// Run as root (as CI runs), the copy must keep each file's owner: a workspace that became
// root's would run its commands as host uid 0, where root's own files are readable.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createWorkspaceAdoptActivities } from '../../activities/workspace-adopt';

const root = process.getuid?.() === 0;
const NOBODY = 65534;
let dir: string;

afterEach(async () => {
  if (dir) await fs.rm(dir, { recursive: true, force: true });
});

describe('host move: laying a workspace out', () => {
  it('copies the files with their owners, symlinks as links; a lost one is empty and its parent owner’s', async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-adopt-'));
    const source = path.join(dir, 'old-disk');
    const workspace = path.join(dir, 'projects', 'ws');
    const old = path.join(source, workspace);
    await fs.mkdir(path.join(old, 'src'), { recursive: true });
    await fs.writeFile(path.join(old, 'src', 'a.txt'), 'a\n');
    await fs.symlink('/etc/shadow', path.join(old, 'shadow-link'));
    // Whose the files are: nobody's when the test can give them away (root), else the test's own.
    const owner = root ? NOBODY : process.getuid!();
    if (root) for (const p of [old, path.join(old, 'src'), path.join(old, 'src', 'a.txt'), path.join(old, 'shadow-link')]) await fs.lchown(p, NOBODY, NOBODY);
    await fs.mkdir(path.dirname(workspace), { recursive: true });
    if (root) await fs.chown(path.dirname(workspace), NOBODY, NOBODY);

    const activities = createWorkspaceAdoptActivities();
    const adoptWorkspace = (request: Parameters<typeof activities.adoptWorkspace>[0]) => activities.adoptWorkspace(request);
    const copied = await adoptWorkspace({ workspace, moveId: 'm1', from: 'host-a', to: 'host-b', files: 'copy', source });
    expect(copied).toEqual({ copied: 2, inPlace: false });
    expect(await fs.readFile(path.join(workspace, 'src', 'a.txt'), 'utf8')).toBe('a\n');
    expect(await fs.readlink(path.join(workspace, 'shadow-link'))).toBe('/etc/shadow');
    for (const p of [workspace, path.join(workspace, 'src'), path.join(workspace, 'src', 'a.txt'), path.join(workspace, 'shadow-link')]) {
      expect({ p, uid: (await fs.lstat(p)).uid }).toEqual({ p, uid: owner });
    }

    const lost = path.join(dir, 'projects', 'ws-lost');
    expect(await adoptWorkspace({ workspace: lost, moveId: 'm2', from: 'host-a', to: 'host-b', files: 'lost' })).toEqual({ copied: 0, inPlace: false });
    expect((await fs.stat(lost)).uid).toBe(owner);
    expect((await fs.readdir(lost)).filter((e) => e !== '.keel')).toEqual([]);
  });
});
