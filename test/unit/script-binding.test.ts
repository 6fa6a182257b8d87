// Which words of a command name a workspace file it runs (machines/script-binding.ts), and
// how a change is found and said. The worker resolves the words (activities/tools/script-hash.ts).
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { hashScripts } from '../../activities/tools/script-hash';
import { openWorkspace } from '../../activities/tools/workspace';
import { bindScripts, changedScripts, describeScriptChanges, scriptWordsOf } from '../../machines/script-binding';

describe('scriptWordsOf', () => {
  it.each([
    ['./build.sh', ['./build.sh']],
    ['bash build.sh --fast', ['build.sh']],
    ['sh -e scripts/x.sh', ['scripts/x.sh']],
    ['node tools/gen.js && python3 -u run.py', ['tools/gen.js', 'run.py']],
    ['env X=1 ./run.sh | tee log', ['./run.sh']],
    ["sh -c './inner.sh; echo ok'", ['./inner.sh']],
    ['command ./b.sh', ['./b.sh']],
    ['npm run build', ['package.json']],
    ['npm install', ['package.json']],
    ['yarn test', ['package.json']],
    ['make -j4', ['GNUmakefile', 'makefile', 'Makefile']],
    ['make -f build.mk all', ['build.mk']],
    ['deno run main.ts', ['main.ts']],
    ['ls -la && echo hi', []],
    ['/bin/rm -rf x', ['/bin/rm']],
  ])('%s', (command, words) => {
    expect(scriptWordsOf(command)).toEqual(words);
  });

  it('reads argv arrays too', () => {
    expect(scriptWordsOf(['bash', 'ci.sh'])).toEqual(['ci.sh']);
  });
});

describe('changes against what an approval bound', () => {
  const a = `sha256:${'a'.repeat(64)}`;
  const b = `sha256:${'b'.repeat(64)}`;
  it('only files the command runs now count; a gone file is a change; the first binding stays', () => {
    expect(changedScripts({ 'x.sh': a, 'y.sh': a }, { 'x.sh': a, 'y.sh': b }, ['x.sh'])).toEqual([]);
    expect(changedScripts({ 'x.sh': a }, { 'x.sh': b }, ['x.sh'])).toEqual([{ path: 'x.sh', approved: a, now: b }]);
    expect(changedScripts({ 'x.sh': a }, {}, ['x.sh'])).toEqual([{ path: 'x.sh', approved: a, now: null }]);
    expect(describeScriptChanges([{ path: 'x.sh', approved: a, now: null }])).toMatch(/^x\.sh \(approved sha256:aaaaaaaaaaaa…, now gone\) changed after the approval/);
    expect(bindScripts({ 'x.sh': a }, { 'x.sh': b, 'y.sh': b })).toEqual({ 'x.sh': a, 'y.sh': b });
  });
});

describe('hashScripts (worker side)', () => {
  it('hashes regular files inside the workspace; a symlink out of it is named but bound to nothing; system programs are not named', async () => {
    const root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-scripts-')));
    try {
      await fs.writeFile(path.join(root, 'build.sh'), 'echo hi\n');
      await fs.symlink('/etc/hostname', path.join(root, 'out.sh'));
      const ws = await openWorkspace(root);
      const r = await hashScripts(ws, root, './build.sh && bash out.sh && /bin/true && sh ../escape.sh');
      expect(r.runs).toEqual(['build.sh', 'out.sh']);
      expect(Object.keys(r.hashes)).toEqual(['build.sh']);
      // sha256 of "echo hi\n", as sha256sum(1) says.
      expect(r.hashes['build.sh']).toBe('sha256:ab08508fdf5ca4da5c4995987bc41c56c048aaa5eeb046417ae4049b7d40286e');
    } finally {
      await fs.rm(root, { recursive: true, force: true });
    }
  });
});
