// The sandbox mounts the workspace it verified: the directory is opened once, component by
// component without following a symlink, and bubblewrap binds that descriptor. A workspace
// swapped for a symlink after the check (by a session whose workspace holds this one) is not
// what the command gets; a workspace nested in another cannot be renamed or exchanged by the
// outer one's commands; the walk for protected paths is bounded and leaves the event loop free.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '../../../activities/tools/limits';
import { MAX_PROTECTED_PATHS } from '../../../activities/tools/protected-mounts';
import { executeTool } from '../../../activities/tools/run-tool';
import { prepareMounts, spawnSandboxed, type SandboxSpec } from '../../../activities/tools/sandbox';
import { openWorkspace } from '../../../activities/tools/workspace';
import { makeWorkspace, matching, type TestWorkspace } from './context';

/** renameat2(RENAME_EXCHANGE) through perl: swaps two names atomically, as the attack does. */
const RENAMEAT2 = process.arch === 'arm64' ? 276 : 316;
const exchange = (a: string, b: string) => `perl -e '$a = "${a}"; $b = "${b}"; exit(syscall(${RENAMEAT2}, -100, $a, -100, $b, 2) == 0 ? 0 : 1)'`;

let t: TestWorkspace;
beforeEach(async () => {
  t = await makeWorkspace();
  await fs.writeFile(path.join(t.outside, 'canary.txt'), 'OUTSIDE-CANARY\n');
});
// Generous: the walk-bomb test leaves tens of thousands of directories to remove, slowly on a busy machine.
afterEach(() => t.cleanup(), 120_000);

async function runIn(spec: SandboxSpec, script: string, mounts: Awaited<ReturnType<typeof prepareMounts>>): Promise<string> {
  const { child } = spawnSandboxed(spec, ['/bin/sh', '-c', script], { env: { PATH: '/usr/bin:/bin' }, stdin: 'ignore', detached: false, mounts });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  await new Promise((resolve) => child.once('close', resolve));
  return output;
}

describe('the sandbox binds the workspace it verified', () => {
  it('a workspace swapped for a symlink to a directory outside after the check: the command still gets the checked directory', async () => {
    const inner = path.join(t.dir, 'rw');
    await fs.mkdir(inner);
    await fs.writeFile(path.join(inner, 'mine.txt'), 'MINE\n');
    const spec: SandboxSpec = { sandbox: { level: 'workspace-write', network: false }, workspace: inner, cwd: inner, limits: DEFAULT_LIMITS };
    const mounts = await prepareMounts(spec);
    // What session A's command does between B's check and B's mount.
    await fs.rename(inner, path.join(t.dir, 'rw-moved'));
    await fs.symlink(t.outside, inner);
    const output = await runIn(spec, 'cat mine.txt canary.txt; echo x > made.txt', mounts);
    expect(output).toContain('MINE');
    expect(output).not.toContain('OUTSIDE-CANARY');
    await expect(fs.stat(path.join(t.outside, 'made.txt'))).rejects.toThrow(/ENOENT/);
    expect(await fs.readFile(path.join(t.dir, 'rw-moved/made.txt'), 'utf8')).toBe('x\n');
    await expect(fs.stat(path.join(t.outside, '.keel'))).rejects.toThrow(/ENOENT/);
  });

  it('a workspace that is a symlink when the command starts is refused, and nothing is made through it', async () => {
    const inner = path.join(t.dir, 'rw');
    await fs.mkdir(inner);
    const ws = await openWorkspace(inner);
    await fs.rm(inner, { recursive: true });
    await fs.symlink(t.outside, inner);
    const result = await executeTool(t.ctx({ ws, sandbox: { level: 'workspace-write', network: false } }), 'run_command', { command: 'cat canary.txt' });
    expect(result.is_error).toBe(true);
    expect(result.content).not.toContain('OUTSIDE-CANARY');
    await expect(fs.stat(path.join(t.outside, '.keel'))).rejects.toThrow(/ENOENT/);
  });

  it("nested workspaces: the outer workspace's commands cannot rename, exchange or remove the inner one's root, nor reach its .keel/", async () => {
    await fs.mkdir(path.join(t.dir, 'rw/.keel'), { recursive: true });
    await fs.writeFile(path.join(t.dir, 'rw/.keel/policy.json'), '{"mode":"ask"}');
    await fs.writeFile(path.join(t.dir, 'rw/file.txt'), 'inner\n');
    const result = await executeTool(t.ctx({ sandbox: { level: 'workspace-write', network: false } }), 'run_command', {
      command: [
        `ln -s ${t.outside} link`,
        `${exchange('rw', 'link')} && echo EXCHANGED || echo EXCHANGE-REFUSED`,
        `mv rw rw2 && echo MOVED || echo MOVE-REFUSED`,
        `rm -rf rw 2>/dev/null; [ -d rw ] && echo STILL-THERE`,
        `echo outer >> rw/file.txt && echo INNER-FILES-WRITABLE`,
      ].join('; '),
    });
    for (const word of ['EXCHANGE-REFUSED', 'MOVE-REFUSED', 'STILL-THERE', 'INNER-FILES-WRITABLE']) expect(result.content).toContain(word);
    expect((await fs.lstat(path.join(t.dir, 'rw'))).isDirectory()).toBe(true);
    expect(await fs.readFile(path.join(t.dir, 'rw/.keel/policy.json'), 'utf8')).toBe('{"mode":"ask"}');
  });
});

describe('the protected-path walk', () => {
  it(`is bounded: more than ${MAX_PROTECTED_PATHS} .git directories refuse the command with a reason, and the worker answers at once`, async () => {
    const script = `for i in $(seq 1 ${MAX_PROTECTED_PATHS + 20}); do mkdir -p d$i/.git; done`;
    expect(spawnSync('/bin/sh', ['-c', script], { cwd: t.dir }).status).toBe(0);
    const result = await executeTool(t.ctx({ sandbox: { level: 'workspace-write', network: false } }), 'run_command', { command: 'echo ran' });
    expect(result).toMatchObject({ is_error: true, content: matching(new RegExp(`more than ${MAX_PROTECTED_PATHS} \\.git or nested \\.keel directories`)) });
    expect(result.content).not.toMatch(/^ran$/m);
  });

  it('runs off the event loop: a workspace of many directories does not stall the worker while a command starts', async () => {
    // 10,000 directories: the walk takes a while, the event loop must not wait for it.
    expect(spawnSync('/bin/sh', ['-c', 'for i in $(seq 1 100); do mkdir -p "a$i"; (cd "a$i" && mkdir $(seq 1 100)); done'], { cwd: t.dir }).status).toBe(0);
    let last = Date.now();
    let worstGap = 0;
    const ticker = setInterval(() => {
      const now = Date.now();
      worstGap = Math.max(worstGap, now - last);
      last = now;
    }, 5);
    const started = Date.now();
    const mounts = await prepareMounts({ workspace: t.dir, sandbox: { level: 'workspace-write', network: false } });
    const took = Date.now() - started;
    // The gap still open when the walk ends counts too: a walk that held the loop throughout
    // let no tick run at all, and would otherwise leave worstGap at 0.
    worstGap = Math.max(worstGap, Date.now() - last);
    clearInterval(ticker);
    mounts.close();
    // The loop ticks throughout. A walk on the event loop would show one gap as long as the
    // whole walk; off it, the gaps are the scheduler's, which on 2 cores busy with a whole
    // `npm test` reached 143 ms of a 470 ms walk (a quarter was the bound then: it failed).
    expect(worstGap).toBeLessThan(Math.max(took / 2, 50));
  });
});

