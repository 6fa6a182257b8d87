// Workspace confinement against the real filesystem: traversal, absolute paths,
// symlinks out, and symlinks swapped in after a check.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { executeTool } from '../../../activities/tools/run-tool';
import { openExisting, relativePath, ToolError } from '../../../activities/tools/workspace';
import { makeWorkspace, matching, type TestWorkspace, waitFor } from './context';
import { killWhenTestEnds } from '../../fixtures/child-teardown';

let t: TestWorkspace;
beforeEach(async () => {
  t = await makeWorkspace();
  await fs.writeFile(path.join(t.dir, 'inside.txt'), 'inside\n');
  await fs.writeFile(path.join(t.outside, 'secret.txt'), 'SECRET\n');
});
afterEach(async () => {
  await t.cleanup();
});

const run = (tool: string, input: unknown) => executeTool(t.ctx(), tool, input);

describe('workspace confinement', () => {
  it('refuses ../ traversal for every path-taking tool', async () => {
    const attempts: [string, unknown][] = [
      ['read_file', { path: '../outside/secret.txt' }],
      ['read_file', { path: 'a/../../outside/secret.txt' }],
      ['write_file', { path: '../outside/new.txt', content: 'x' }],
      ['edit_file', { path: '../outside/secret.txt', old_string: 'SECRET', new_string: 'gone' }],
      ['list_dir', { path: '..' }],
      ['glob', { pattern: '*', path: '../outside' }],
      ['glob', { pattern: '../outside/*' }],
      ['grep', { pattern: 'SECRET', path: '../outside' }],
      ['run_command', { command: 'cat secret.txt', cwd: '../outside' }],
    ];
    for (const [tool, input] of attempts) {
      const result = await run(tool, input);
      expect(result.is_error, `${tool} ${JSON.stringify(input)}`).toBe(true);
      expect(result.content).toMatch(/outside the workspace|must stay inside the workspace/);
      expect(result.content).not.toContain('SECRET');
    }
    await expect(fs.readdir(t.outside)).resolves.toEqual(['secret.txt']);
  });

  it('refuses absolute paths, even ones inside the workspace', async () => {
    for (const p of ['/etc/passwd', path.join(t.dir, 'inside.txt')]) {
      const result = await run('read_file', { path: p });
      expect(result).toMatchObject({ is_error: true, content: matching(/absolute paths are not accepted/) });
    }
  });

  it('refuses a symlink to /etc, for reading, listing, searching and writing', async () => {
    await fs.symlink('/etc', path.join(t.dir, 'etc'));
    await fs.symlink('/etc/passwd', path.join(t.dir, 'passwd'));
    const read = await run('read_file', { path: 'passwd' });
    expect(read).toMatchObject({ is_error: true, content: matching(/^read_file: path "passwd" is a symlink that leads outside the workspace; refused/) });
    expect((await run('read_file', { path: 'etc/passwd' })).content).toMatch(/resolves outside the workspace/);
    expect((await run('list_dir', { path: 'etc' })).content).toMatch(/outside the workspace/);
    expect((await run('grep', { pattern: 'root', path: 'etc' })).content).toMatch(/outside the workspace/);
    const write = await run('write_file', { path: 'etc/keel-test', content: 'x' });
    expect(write).toMatchObject({ is_error: true, content: matching(/outside the workspace/) });
    const overwrite = await run('write_file', { path: 'passwd', content: 'x' });
    expect(overwrite).toMatchObject({ is_error: true, content: matching(/outside the workspace/) });
    // A walk lists the links but never follows them.
    const grep = await run('grep', { pattern: 'root:' });
    expect(grep.content).toMatch(/^No matches/);
    expect((await run('glob', { pattern: '**/passwd' })).content).toBe('passwd');
  });

  it('follows symlinks that stay inside', async () => {
    await fs.mkdir(path.join(t.dir, 'src'));
    await fs.symlink('../inside.txt', path.join(t.dir, 'src/link.txt'));
    expect(await run('read_file', { path: 'src/link.txt' })).toEqual({ content: '1\tinside', is_error: false, facts: { kind: 'read', bytes: 7, files: 1 } });
    expect((await run('write_file', { path: 'src/link.txt', content: 'changed\n' })).is_error).toBe(false);
    expect(await fs.readFile(path.join(t.dir, 'inside.txt'), 'utf8')).toBe('changed\n');
  });

  it('checks at the moment of use: a symlink swapped in after the check is refused', async () => {
    const victim = path.join(t.dir, 'file.txt');
    await fs.writeFile(victim, 'fine\n');
    // The lexical check passes, as would any check made now…
    expect(relativePath('file.txt')).toBe('file.txt');
    // …then the file is swapped for a link out before it is used.
    await fs.rm(victim);
    await fs.symlink(path.join(t.outside, 'secret.txt'), victim);
    await expect(openExisting(t.ctx().ws, 'file.txt', 'read')).rejects.toThrow(ToolError);
    const result = await run('read_file', { path: 'file.txt' });
    expect(result.is_error).toBe(true);
    expect(result.content).not.toContain('SECRET');
  });

  it('never escapes while another process keeps swapping a file and a directory for symlinks out', async () => {
    await fs.mkdir(path.join(t.dir, 'd'));
    await fs.writeFile(path.join(t.dir, 'f'), 'plain\n');
    // A separate process flips `f` and `d` between real entries and links to the
    // outside directory as fast as it can, atomically (rename over).
    const swapper = killWhenTestEnds(spawn(
      process.execPath,
      [
        '-e',
        `
        const fs = require('fs'); const p = require('path');
        const [ws, out] = process.argv.slice(1);
        fs.mkdirSync(p.join(ws, 'real-d'), { recursive: true });
        fs.writeFileSync(p.join(ws, 'real-f'), 'plain\\n');
        for (let i = 0; ; i++) {
          const evil = i % 2 === 0;
          try { fs.rmSync(p.join(ws, 'tmp-f'), { force: true }); fs.rmSync(p.join(ws, 'tmp-d'), { force: true }); } catch {}
          if (evil) { fs.symlinkSync(p.join(out, 'secret.txt'), p.join(ws, 'tmp-f')); fs.symlinkSync(out, p.join(ws, 'tmp-d')); }
          else { fs.symlinkSync('real-f', p.join(ws, 'tmp-f')); fs.symlinkSync('real-d', p.join(ws, 'tmp-d')); }
          fs.renameSync(p.join(ws, 'tmp-f'), p.join(ws, 'f'));
          try { fs.rmSync(p.join(ws, 'd'), { recursive: true, force: true }); } catch {}
          try { fs.renameSync(p.join(ws, 'tmp-d'), p.join(ws, 'd')); } catch {}
        }`,
        t.dir,
        t.outside,
      ],
      { stdio: 'ignore' },
    ));
    try {
      // The swapper creates real-f first thing: from then on it is flipping.
      expect(await waitFor(() => existsSync(path.join(t.dir, 'real-f')), 30_000)).toBe(true);
      let refused = 0;
      let attempts = 0;
      const until = Date.now() + 20_000;
      while ((attempts < 300 || refused === 0) && Date.now() < until) {
        const read = await run('read_file', { path: 'f' });
        expect(read.content).not.toContain('SECRET');
        const written = await run('write_file', { path: `d/out-${attempts}.txt`, content: 'x' });
        if (read.is_error || written.is_error) refused += 1;
        attempts += 1;
      }
      // The race was real: some attempts met the link and were refused.
      expect(refused).toBeGreaterThan(0);
    } finally {
      swapper.kill('SIGKILL');
    }
    await expect(fs.readdir(t.outside)).resolves.toEqual(['secret.txt']);
    expect(await fs.readFile(path.join(t.outside, 'secret.txt'), 'utf8')).toBe('SECRET\n');
  });

  it("keeps the agent out of Keel's own .keel/ directory", async () => {
    const result = await run('write_file', { path: '.keel/policy.json', content: '{"mode":"full-auto"}' });
    expect(result).toMatchObject({ is_error: true, content: matching(/\.keel\/ holds Keel's own state/) });
  });

  it('keeps .keel/ out of reach through a symlinked directory, a symlinked file and a symlinked parent chain', async () => {
    await fs.mkdir(path.join(t.dir, '.keel'));
    await fs.writeFile(path.join(t.dir, '.keel/policy.json'), '{"mode":"ask"}');
    await fs.symlink('.keel', path.join(t.dir, 'cfg'));
    await fs.symlink('.keel/policy.json', path.join(t.dir, 'pol.json'));
    await fs.mkdir(path.join(t.dir, 'deep'));
    await fs.symlink('../cfg', path.join(t.dir, 'deep/up'));
    const attempts: [string, unknown][] = [
      ['write_file', { path: 'cfg/policy.json', content: '{"mode":"full-auto"}' }],
      ['write_file', { path: 'cfg/new/policy.json', content: '{}' }],
      ['write_file', { path: 'pol.json', content: '{"mode":"full-auto"}' }],
      ['write_file', { path: 'deep/up/policy.json', content: '{"mode":"full-auto"}' }],
      ['edit_file', { path: 'cfg/policy.json', old_string: 'ask', new_string: 'full-auto' }],
      ['edit_file', { path: 'pol.json', old_string: 'ask', new_string: 'full-auto' }],
    ];
    for (const [tool, input] of attempts) {
      const result = await run(tool, input);
      expect(result, `${tool} ${JSON.stringify(input)}`).toMatchObject({ is_error: true, content: matching(/\.keel\/ holds Keel's own state/) });
    }
    expect(await fs.readFile(path.join(t.dir, '.keel/policy.json'), 'utf8')).toBe('{"mode":"ask"}');
    // Nothing of the agent's making appeared there (state/ holds edit_file's own records).
    expect((await fs.readdir(path.join(t.dir, '.keel'))).filter((name) => name !== 'state')).toEqual(['policy.json']);
  });

  it('does not read a file with several hard links (its other name may be outside)', async () => {
    await fs.link(path.join(t.outside, 'secret.txt'), path.join(t.dir, 'linked.txt'));
    for (const [tool, input] of [
      ['read_file', { path: 'linked.txt' }],
      ['grep', { pattern: 'SECRET', path: 'linked.txt' }],
      ['edit_file', { path: 'linked.txt', old_string: 'SECRET', new_string: 'x' }],
    ] as const) {
      const result = await run(tool, input);
      expect(result, tool).toMatchObject({ is_error: true, content: matching(/has 2 hard links/) });
    }
    const searched = await run('grep', { pattern: 'SECRET' });
    expect(searched.content).not.toContain('SECRET\n');
    expect(searched.content).toMatch(/No matches .*\n\[skipped: 1 file with several hard links/);
    expect(await fs.readFile(path.join(t.outside, 'secret.txt'), 'utf8')).toBe('SECRET\n');
  });

  it('list_dir does not show where symlinks outside lead', async () => {
    await fs.symlink(path.join(t.outside, 'secret.txt'), path.join(t.dir, 'abs'));
    await fs.symlink('../outside', path.join(t.dir, 'rel'));
    await fs.symlink('inside.txt', path.join(t.dir, 'ok'));
    await fs.symlink('nowhere.txt', path.join(t.dir, 'dangling'));
    const listing = (await run('list_dir', {})).content;
    expect(listing).not.toContain(t.outside);
    expect(listing).not.toContain('../outside');
    expect(listing).toContain('abs -> (outside the workspace)');
    expect(listing).toContain('rel -> (outside the workspace)');
    expect(listing).toContain('ok -> inside.txt');
    expect(listing).toContain('dangling -> nowhere.txt (missing)');
  });

  it('grep and glob refuse patterns that reach outside, with the same message', async () => {
    for (const pattern of ['../**', '/etc/*', 'a/../../x', '~/x']) {
      const viaGlob = await run('glob', { pattern });
      const viaGrep = await run('grep', { pattern: 'SECRET', glob: pattern });
      expect(viaGlob).toMatchObject({ is_error: true, content: matching(/must stay inside the workspace/) });
      expect(viaGrep.content.replace(/^grep: /, '')).toBe(viaGlob.content.replace(/^glob: /, ''));
    }
  });
});

describe('refusals do not map the host', () => {
  it('a symlink to an existing and to a missing host path: the same refusal, naming neither', async () => {
    await fs.writeFile(path.join(t.outside, 'exists.txt'), 'x\n');
    await fs.symlink(path.join(t.outside, 'exists.txt'), path.join(t.dir, 'to-existing'));
    await fs.symlink(path.join(t.outside, 'no-such-file'), path.join(t.dir, 'to-missing'));
    const existing = await executeTool(t.ctx(), 'read_file', { path: 'to-existing' });
    const missing = await executeTool(t.ctx(), 'read_file', { path: 'to-missing' });
    expect(existing.is_error).toBe(true);
    expect(missing.content.replace('to-missing', 'X')).toBe(existing.content.replace('to-existing', 'X'));
    expect(existing.content).not.toContain(t.outside);
    const listing = await executeTool(t.ctx(), 'list_dir', { path: '.' });
    expect(listing.content).not.toContain(t.outside);
    expect(listing.content).not.toContain('missing target');
  });
});
