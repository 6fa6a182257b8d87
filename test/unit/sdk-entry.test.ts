// The SDK's public entry is `keel/client` (package.json "exports"), and the examples people copy
// import it by that name, never a private path of the checkout (`./client/index`).
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

describe('keel/client', () => {
  it('resolves through package.json "exports" to the SDK (and keel/tools, keel/worker for tool authors), by package name', async () => {
    // Node's own resolver, as a program importing Keel by name uses it (nothing is loaded).
    const script = "for (const n of ['keel/client', 'keel/tools', 'keel/worker']) console.log(new URL(import.meta.resolve(n)).pathname);";
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: root });
    expect(stdout.trim().split('\n')).toEqual(['client/index.ts', 'activities/tools/index.ts', 'worker/worker.ts'].map((f) => path.join(root, f)));
    // And a private path is not reachable by the package's name.
    await expect(run(process.execPath, ['--input-type=module', '-e', "import.meta.resolve('keel/client/keel-client.ts')"], { cwd: root })).rejects.toThrow(/ERR_PACKAGE_PATH_NOT_EXPORTED/);
  });

  it('is what the README and docs/ examples import: no private path of the checkout', () => {
    const pages = ['README.md', ...readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
    for (const page of pages) {
      const blocks = [...readFileSync(path.join(root, page), 'utf8').matchAll(/```(?:ts|tsx|js|typescript)\n([\s\S]*?)```/g)].map((m) => m[1]!);
      for (const block of blocks) {
        for (const m of block.matchAll(/from '([^']+)'/g)) expect(m[1], `${page}: ${m[0]}`).not.toMatch(/^\.|client\/index/);
      }
    }
  });
});
