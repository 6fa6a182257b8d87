// activities/workspace-tree.ts: a directory replaced by a link is refused, never followed, and
// the refusal names the workspace path (not the /proc/self/fd/N path the call went through).
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { PinnedTree } from '../../activities/workspace-tree';

let root: string;
afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

it('a directory swapped for a link to outside after it was listed is refused by its workspace name, and nothing outside is read', async () => {
  root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-tree-')));
  await fs.mkdir(path.join(root, 'ws', 'd'), { recursive: true });
  await fs.mkdir(path.join(root, 'outside'));
  await fs.writeFile(path.join(root, 'outside', 'secret.txt'), 'secret');
  const tree = new PinnedTree(path.join(root, 'ws'));
  try {
    expect(tree.entries('').map((e) => e.name)).toEqual(['d']);
    await fs.rm(path.join(root, 'ws', 'd'), { recursive: true });
    await fs.symlink(path.join(root, 'outside'), path.join(root, 'ws', 'd'));
    expect(() => tree.entries('d')).toThrow('d in the workspace is no longer a directory');
    expect(tree.read('d/secret.txt')).toBeNull();
  } finally {
    tree.close();
  }
});
