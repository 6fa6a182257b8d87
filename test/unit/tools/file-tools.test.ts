// read_file, write_file, edit_file, list_dir, glob and grep on the real filesystem.
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { executeTool } from '../../../activities/tools/run-tool';
import { type ToolContext } from '../../../activities/tools/context';
import { makeWorkspace, matching, type TestWorkspace } from './context';

let t: TestWorkspace;
beforeEach(async () => {
  t = await makeWorkspace();
});
afterEach(async () => {
  await t.cleanup();
});

const run = (tool: string, input: unknown, ctx: ToolContext = t.ctx()) => executeTool(ctx, tool, input);
const put = async (rel: string, content: string | Buffer) => {
  await fs.mkdir(path.dirname(path.join(t.dir, rel)), { recursive: true });
  await fs.writeFile(path.join(t.dir, rel), content);
};

describe('read_file', () => {
  it('reads line ranges with line numbers', async () => {
    await put('a.txt', 'one\ntwo\nthree\nfour\n');
    expect((await run('read_file', { path: 'a.txt' })).content).toBe('1\tone\n2\ttwo\n3\tthree\n4\tfour');
    expect((await run('read_file', { path: 'a.txt', offset: 2, limit: 2 })).content).toBe(
      '2\ttwo\n3\tthree\n[lines 2–3 of 4 shown; read on with offset: 4]',
    );
    expect(await run('read_file', { path: 'a.txt', offset: 9 })).toMatchObject({ is_error: true, content: matching(/past the end.*4 lines/) });
  });

  it('reports a missing file as a tool error', async () => {
    expect(await run('read_file', { path: 'nope.txt' })).toEqual({ is_error: true, content: 'read_file: no such file: nope.txt' });
  });

  it('does not show binary files', async () => {
    await put('img.bin', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01, 0xff, 0xfe]));
    expect(await run('read_file', { path: 'img.bin' })).toEqual({ is_error: false, content: 'img.bin is a binary file (8 B); its content is not shown.', facts: { kind: 'read', bytes: 8, files: 1 } });
    await put('latin1.txt', Buffer.from('caf\xe9 cr\xe8me', 'latin1'));
    expect((await run('read_file', { path: 'latin1.txt' })).content).toMatch(/binary file/);
  });

  it('keeps a 10 MB file within the output budget and says how to read on', async () => {
    const line = 'x'.repeat(99);
    await put('big.txt', `${line}\n`.repeat(100_000));
    const result = await run('read_file', { path: 'big.txt' });
    expect(result.is_error).toBe(false);
    expect(Buffer.byteLength(result.content)).toBeLessThan(30_000);
    // Streamed: a file over 4 MiB is read only as far as the answer needs, so its length in lines is not known.
    expect(result.content).toMatch(/\[lines 1–\d+ shown; the file \(9\.5 MiB\) goes on; read on with offset: \d+\]$/);
    expect((result.facts as { bytes: number }).bytes).toBeLessThan(1024 * 1024);
    const far = await run('read_file', { path: 'big.txt', offset: 99_999 });
    expect(far.content).toBe(` 99999\t${line}\n100000\t${line}`);
  });
});

describe('write_file', () => {
  it('creates parent directories and replaces whole files', async () => {
    expect(await run('write_file', { path: 'src/deep/new.ts', content: 'export {};\n' })).toEqual({
      is_error: false,
      content: 'Created src/deep/new.ts (11 bytes).',
      facts: { kind: 'files_changed', filesChanged: ['src/deep/new.ts'] },
    });
    expect((await run('write_file', { path: 'src/deep/new.ts', content: 'x' })).content).toBe('Wrote src/deep/new.ts (1 bytes).');
    expect(await fs.readFile(path.join(t.dir, 'src/deep/new.ts'), 'utf8')).toBe('x');
    expect(await fs.readdir(path.join(t.dir, 'src/deep'))).toEqual(['new.ts']); // no temp files left
  });

  it('answers a retry of the same call as the first attempt did', async () => {
    const ctx = t.ctx();
    const first = await run('write_file', { path: 'a.txt', content: 'hello' }, ctx);
    const retry = await run('write_file', { path: 'a.txt', content: 'hello' }, ctx);
    expect(retry).toEqual(first);
    expect(first.content).toMatch(/^Created/);
  });

  it('refuses to write over a directory', async () => {
    await fs.mkdir(path.join(t.dir, 'dir'));
    expect(await run('write_file', { path: 'dir', content: 'x' })).toMatchObject({ is_error: true, content: 'write_file: dir is a directory' });
  });
});

describe('edit_file', () => {
  it('replaces a unique occurrence', async () => {
    await put('a.ts', 'const a = 1;\nconst b = 2;\n');
    expect(await run('edit_file', { path: 'a.ts', old_string: 'b = 2', new_string: 'b = 3' })).toEqual({
      is_error: false,
      content: 'Edited a.ts: replaced 1 occurrence (line 2).',
      facts: { kind: 'files_changed', filesChanged: ['a.ts'] },
    });
    expect(await fs.readFile(path.join(t.dir, 'a.ts'), 'utf8')).toBe('const a = 1;\nconst b = 3;\n');
  });

  it('fails clearly when the old text is absent or ambiguous, and changes nothing', async () => {
    await put('a.ts', 'x = 1\ny = 2\nx = 1\n');
    const absent = await run('edit_file', { path: 'a.ts', old_string: 'z = 9', new_string: 'z = 0' });
    expect(absent).toMatchObject({ is_error: true, content: matching(/old_string was not found in a\.ts\. It must match the file exactly/) });
    const ambiguous = await run('edit_file', { path: 'a.ts', old_string: 'x = 1', new_string: 'x = 2' });
    expect(ambiguous).toEqual({
      is_error: true,
      content: 'edit_file: old_string occurs 2 times in a.ts (at lines 1, 3); add surrounding lines to make it unique, or set replace_all: true.',
    });
    expect(await fs.readFile(path.join(t.dir, 'a.ts'), 'utf8')).toBe('x = 1\ny = 2\nx = 1\n');
    const all = await run('edit_file', { path: 'a.ts', old_string: 'x = 1', new_string: 'x = $&2', replace_all: true });
    expect(all.content).toBe('Edited a.ts: replaced 2 occurrences (lines 1, 3).');
    expect(await fs.readFile(path.join(t.dir, 'a.ts'), 'utf8')).toBe('x = $&2\ny = 2\nx = $&2\n');
    expect((await run('edit_file', { path: 'missing.ts', old_string: 'a', new_string: 'b' })).content).toBe('edit_file: no such file: missing.ts');
  });

  it('never applies an edit twice, even when the crash came between applying and answering', async () => {
    // An edit that would still apply to its own output: applied twice it gives "1 1 1".
    await put('count.txt', 'count: 1\n');
    const ctx = t.ctx();
    const input = { path: 'count.txt', old_string: 'count: 1', new_string: 'count: 1 1' };
    const first = await run('edit_file', input, ctx);
    expect(first.is_error).toBe(false);
    expect(await run('edit_file', input, ctx)).toEqual(first);

    // Simulate the crash: the ledger holds the intent but not the answer.
    const ledgerDir = path.join(t.dir, '.keel/state/applied');
    const [record] = await fs.readdir(ledgerDir);
    const recordPath = path.join(ledgerDir, record ?? '');
    const { result: _answer, ...intent } = JSON.parse(await fs.readFile(recordPath, 'utf8')) as Record<string, unknown>;
    await fs.writeFile(recordPath, JSON.stringify(intent));
    const retried = await run('edit_file', input, ctx);
    expect(retried).toEqual({ is_error: false, content: 'Edited count.txt (applied by an earlier attempt of this call).', facts: { kind: 'files_changed', filesChanged: ['count.txt'] } });
    expect(await fs.readFile(path.join(t.dir, 'count.txt'), 'utf8')).toBe('count: 1 1\n');

    // A different call with the same input is a new edit, and applies.
    await run('edit_file', input, t.ctx());
    expect(await fs.readFile(path.join(t.dir, 'count.txt'), 'utf8')).toBe('count: 1 1 1\n');
  });
});

describe('list_dir, glob, grep', () => {
  beforeEach(async () => {
    await put('src/a.ts', 'export const answer = 42;\n// TODO: more\n');
    await put('src/b.js', 'const TODO = 1;\n');
    await put('docs/readme.md', 'nothing here\n');
    await put('bin.dat', Buffer.from([0, 1, 2, 84, 79, 68, 79]));
    await put('node_modules/x/index.js', '// TODO in a dependency\n');
    await put('.hidden/conf', 'TODO hidden\n');
  });

  it('lists a directory', async () => {
    await fs.symlink('src/a.ts', path.join(t.dir, 'link'));
    expect((await run('list_dir', {})).content).toBe(
      'workspace root: 6 entries\n.hidden/\ndocs/\nnode_modules/\nsrc/\nbin.dat  (7 B)\nlink -> src/a.ts',
    );
    expect((await run('list_dir', { path: 'src' })).content).toBe('src/: 2 entries\na.ts  (40 B)\nb.js  (16 B)');
    expect(await run('list_dir', { path: 'nope' })).toEqual({ is_error: true, content: 'list_dir: no such directory: nope' });
    expect((await run('list_dir', { path: 'src/a.ts' })).content).toBe('list_dir: src/a.ts is not a directory');
  });

  it('globs paths relative to the workspace, skipping node_modules', async () => {
    expect((await run('glob', { pattern: '**/*.{ts,js}' })).content).toBe('src/a.ts\nsrc/b.js');
    expect((await run('glob', { pattern: '*.ts', path: 'src' })).content).toBe('src/a.ts');
    expect((await run('glob', { pattern: 'node_modules/**' })).content).toBe('node_modules/x/index.js');
    expect((await run('glob', { pattern: '**/*.py' })).content).toBe('No files match **/*.py.');
  });

  it('greps text files with a regex, filters and a result cap', async () => {
    expect((await run('grep', { pattern: 'TODO' })).content).toBe('.hidden/conf:1: TODO hidden\nsrc/a.ts:2: // TODO: more\nsrc/b.js:1: const TODO = 1;');
    expect((await run('grep', { pattern: 'todo', ignore_case: true, glob: '**/*.ts' })).content).toBe('src/a.ts:2: // TODO: more');
    expect((await run('grep', { pattern: 'answer\\s*=', path: 'src/a.ts' })).content).toBe('src/a.ts:1: export const answer = 42;');
    const capped = await run('grep', { pattern: 'TODO', max_results: 1 });
    expect(capped.content).toBe('.hidden/conf:1: TODO hidden\n[more than 1 matching lines; showing the first 1. Narrow the pattern, path or glob]');
  });

  it('reports a bad regex as a tool error', async () => {
    expect(await run('grep', { pattern: 'a(b' })).toEqual({
      is_error: true,
      content: 'grep: invalid regular expression "a(b": Invalid regular expression: /a(b/: Unterminated group',
    });
  });
});

describe('non-UTF-8 file names', () => {
  it('shows odd bytes as \\xNN and accepts them back in paths', async () => {
    const raw = Buffer.concat([Buffer.from(t.dir + '/caf'), Buffer.from([0xe9]), Buffer.from('.txt')]);
    await fs.writeFile(raw, 'latin-1 name\n');
    expect((await run('list_dir', {})).content).toBe('workspace root: 1 entry\ncaf\\xe9.txt  (13 B)');
    expect((await run('glob', { pattern: '*.txt' })).content).toBe('caf\\xe9.txt');
    expect((await run('grep', { pattern: 'latin' })).content).toBe('caf\\xe9.txt:1: latin-1 name');
    expect((await run('read_file', { path: 'caf\\xe9.txt' })).content).toBe('1\tlatin-1 name');
    expect((await run('edit_file', { path: 'caf\\xe9.txt', old_string: 'latin-1', new_string: 'odd' })).is_error).toBe(false);
    expect(await fs.readFile(raw, 'utf8')).toBe('odd name\n');
  });
});

describe('input validation', () => {
  it('turns malformed model input into a tool error that names the problem', async () => {
    expect(await run('read_file', { path: 3, extra: true })).toEqual({
      is_error: true,
      content: matching(/^invalid input for read_file:\n- path: Invalid input: expected string, received number\n- input: Unrecognized key: "extra"/),
    });
    expect(await run('edit_file', 'not an object')).toMatchObject({ is_error: true, content: matching(/^invalid input for edit_file/) });
    expect(await run('teleport', {})).toEqual({ is_error: true, content: 'unknown tool "teleport"' });
    expect(await run('ask_user', { question: 'q' })).toMatchObject({ is_error: true, content: matching(/workflow handles it/) });
  });
});

describe('grep on a file larger than 64 MiB', () => {
  it('streams it instead of answering "No matches"', async () => {
    // 66 MiB where every line matches: grep used to skip it silently and report success.
    const line = `${'x'.repeat(63)}\n`;
    const handle = await fs.open(path.join(t.dir, 'big.log'), 'w');
    const block = Buffer.from(line.repeat(16384));
    for (let i = 0; i < 66; i += 1) await handle.write(block);
    await handle.close();
    const result = await executeTool(t.ctx(), 'grep', { pattern: 'x+', path: 'big.log', max_results: 3 });
    expect(result).toMatchObject({ is_error: false });
    expect(result.content).toMatch(/^big\.log:1: x{63}\nbig\.log:2: x{63}\nbig\.log:3: x{63}\n\[more than 3 matching lines/);
    const whole = await executeTool(t.ctx(), 'grep', { pattern: 'x$', max_results: 1 });
    expect(whole.content).toMatch(/^big\.log:1: /);
  });
});
