// `keel --version` prints the version in package.json and exits 0, as every CLI does.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

describe('keel --version', () => {
  it("prints package.json's version, with -V too, and exits 0", async () => {
    const { version } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };
    expect(version).toMatch(/^\d+\.\d+\.\d+/);
    for (const flag of ['--version', '-V']) {
      const { stdout } = await run(process.execPath, [path.join(root, 'client/bin/keel.js'), flag], { cwd: root });
      expect(stdout.trim()).toBe(version);
    }
  }, 60_000);
});
