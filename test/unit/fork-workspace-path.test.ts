// A fork's directory named through a symlinked parent (a home directory that is a link, say)
// is laid out at the parent's real path: the worker refuses a link anywhere in a fork's path
// (activities/workspace-tree.ts), so the client resolves it once, as it does a session's.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { forkWorkspacePath } from '../../client/workspace';
import { PinnedTree } from '../../activities/workspace-tree';

let root: string;
afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

it("a fork's directory under a symlinked parent is named by the parent's real path, which the worker then opens", async () => {
  root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-fork-path-')));
  await fs.mkdir(path.join(root, 'real'));
  await fs.symlink(path.join(root, 'real'), path.join(root, 'home'));
  const given = path.join(root, 'home', 'fork-1');
  const resolved = await forkWorkspacePath(given);
  expect(resolved).toBe(path.join(root, 'real', 'fork-1'));
  await fs.mkdir(resolved);
  // The path as given would be refused by the worker; the resolved one opens.
  expect(() => new PinnedTree(given)).toThrow(/symlink/);
  new PinnedTree(resolved).close();
  // A parent that does not exist yet is left as given (the worker makes it).
  expect(await forkWorkspacePath(path.join(root, 'nowhere', 'f'))).toBe(path.join(root, 'nowhere', 'f'));
});
