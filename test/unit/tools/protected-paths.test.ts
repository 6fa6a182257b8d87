// `.keel/` and `.git/` at every depth, in every mode: the policy refuses the model's
// request, the file tools refuse what a path really resolves to (symlinks included), and
// the sandbox mounts them read-only (nested `.keel/` hidden) — against the real file
// system and bubblewrap. On main an auto-edit agent wrote sub/.keel/policy.json and
// .git/config, and read another session's conversation under sub/.keel/store.
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { executeTool } from '../../../activities/tools/run-tool';
import { findProtectedPaths } from '../../../activities/tools/protected-mounts';
import { evaluatePolicy, parsePolicy, policyModes, type PolicyConfig } from '../../../machines/policy';
import { makeWorkspace, matching, type TestWorkspace } from './context';

let t: TestWorkspace;
beforeEach(async () => {
  t = await makeWorkspace();
  for (const dir of ['.git/hooks', 'sub/.git', 'sub/.keel/store', '.keel/store', '.keel/artifacts', 'deep/er/.git']) await fs.mkdir(path.join(t.dir, dir), { recursive: true });
  await fs.writeFile(path.join(t.dir, '.git/config'), '[core]\n');
  await fs.writeFile(path.join(t.dir, 'sub/.git/config'), '[core]\n');
  await fs.writeFile(path.join(t.dir, 'sub/.keel/store/other-session.json'), 'OTHER-SESSION-CONVERSATION');
  await fs.writeFile(path.join(t.dir, '.keel/store/root-session.json'), 'ROOT-SESSION-CONVERSATION');
  await fs.writeFile(path.join(t.dir, '.keel/artifacts/out.txt'), 'ARTIFACT');
  await fs.writeFile(path.join(t.dir, 'notes.txt'), 'ask\n');
  await fs.symlink('sub/.keel', path.join(t.dir, 'cfg'));
  await fs.symlink('.git', path.join(t.dir, 'g'));
});
afterEach(async () => {
  await t.cleanup();
});

const policy = (raw: unknown): PolicyConfig => {
  const parsed = parsePolicy(raw);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.policy;
};
const fsmonitor = '[core]\n\tfsmonitor = "touch /tmp/pwned"\n';

describe('the policy', () => {
  it('refuses writes to .keel/ and .git/ at any depth in every mode, even under an allow-everything rule', () => {
    const writes = [
      { tool: 'write_file', input: { path: 'sub/.keel/policy.json', content: '{"mode":"full-auto"}' } },
      { tool: 'write_file', input: { path: '.git/config', content: fsmonitor } },
      { tool: 'edit_file', input: { path: 'a/b/.git/hooks/pre-commit', old_string: 'x', new_string: 'y' } },
      { tool: 'write_file', input: { path: './x/../.git/hooks/post-checkout', content: '#!/bin/sh' } },
      { tool: 'mcp__fs__write_file', input: { path: 'sub/.git/config', content: fsmonitor } },
      { tool: 'run_command', input: { command: 'sh -c true', cwd: 'sub/.git' } },
    ];
    for (const mode of policyModes) {
      for (const call of writes) {
        const verdict = evaluatePolicy(policy({ mode, allow: ['write_file(**)', 'edit_file', 'mcp__*', 'run_command'] }), { ...call, workspace: t.dir });
        expect(verdict, `${mode} ${JSON.stringify(call)}`).toMatchObject({ decision: 'deny', matchedRule: 'protected' });
      }
    }
  });

  it("refuses reading another session's .keel/, not the workspace's own artifacts nor .git", () => {
    const p = policy({ mode: 'full-auto' });
    for (const call of [
      { tool: 'read_file', input: { path: 'sub/.keel/store/other-session.json' } },
      { tool: 'grep', input: { pattern: 'x', path: 'sub/.keel' } },
      { tool: 'list_dir', input: { path: '.keel/store' } },
    ]) {
      expect(evaluatePolicy(p, call).decision, JSON.stringify(call)).toBe('deny');
    }
    expect(evaluatePolicy(p, { tool: 'read_file', input: { path: '.keel/artifacts/out.txt' } }).decision).toBe('allow');
    expect(evaluatePolicy(p, { tool: 'read_file', input: { path: '.git/config' } }).decision).toBe('allow');
  });

  it('asks with a warning before writing files that run later (package.json, .envrc, .vscode/tasks.json), even in full-auto', () => {
    for (const file of ['package.json', 'pkg/a/package.json', '.envrc', '.vscode/tasks.json', '.github/workflows/ci.yml']) {
      const verdict = evaluatePolicy(policy({ mode: 'full-auto', allow: ['write_file(**)'] }), { tool: 'write_file', input: { path: file, content: '{}' } });
      expect(verdict, file).toMatchObject({ decision: 'ask', reason: matching(/WARNING/) });
    }
    // Headless: nobody can answer, so it is denied.
    expect(evaluatePolicy(policy({ mode: 'full-auto' }), { tool: 'write_file', input: { path: '.envrc', content: 'x' } }, { headless: true }).decision).toBe('deny');
    expect(evaluatePolicy(policy({ mode: 'full-auto' }), { tool: 'write_file', input: { path: 'src/index.ts', content: 'x' } }).decision).toBe('allow');
  });
});

describe('the file tools', () => {
  it('refuse to write .keel/ and .git/ at any depth, directly or through a symlink, and leave them unchanged', async () => {
    const attempts: [string, unknown][] = [
      ['write_file', { path: 'sub/.keel/policy.json', content: '{"mode":"full-auto","sandbox":"off"}' }],
      ['write_file', { path: 'cfg/policy.json', content: '{"mode":"full-auto"}' }],
      ['write_file', { path: '.git/config', content: fsmonitor }],
      ['write_file', { path: 'g/config', content: fsmonitor }],
      ['write_file', { path: 'g/hooks/pre-commit', content: '#!/bin/sh\ntouch /tmp/pwned\n' }],
      ['edit_file', { path: 'sub/.git/config', old_string: '[core]', new_string: fsmonitor }],
      ['write_file', { path: 'new/.git/config', content: fsmonitor }],
    ];
    for (const [tool, input] of attempts) {
      const result = await executeTool(t.ctx(), tool, input);
      expect(result, `${tool} ${JSON.stringify(input)}`).toMatchObject({ is_error: true, content: matching(/(\.keel|\.git)\/ .*(may not write|may not read)/) });
    }
    expect(await fs.readFile(path.join(t.dir, '.git/config'), 'utf8')).toBe('[core]\n');
    expect(await fs.readFile(path.join(t.dir, 'sub/.git/config'), 'utf8')).toBe('[core]\n');
    expect(await fs.readdir(path.join(t.dir, '.git/hooks'))).toEqual([]);
    expect(await fs.readdir(path.join(t.dir, 'sub/.keel'))).toEqual(['store']);
    await expect(fs.stat(path.join(t.dir, 'new'))).rejects.toThrow(/ENOENT/);
    // Ordinary files still work.
    expect(await executeTool(t.ctx(), 'edit_file', { path: 'notes.txt', old_string: 'ask', new_string: 'done' })).toMatchObject({ is_error: false });
  });

  it("do not read, list or search another session's .keel/ (also through a symlink); the root's artifacts stay readable", async () => {
    for (const [tool, input] of [
      ['read_file', { path: 'sub/.keel/store/other-session.json' }],
      ['read_file', { path: 'cfg/store/other-session.json' }],
      ['read_file', { path: '.keel/store/root-session.json' }],
      ['list_dir', { path: 'cfg' }],
      ['grep', { pattern: 'CONVERSATION', path: 'cfg' }],
    ] as const) {
      const result = await executeTool(t.ctx(), tool, input);
      expect(result.content, `${tool} ${JSON.stringify(input)}`).not.toContain('CONVERSATION');
      expect(result.is_error, `${tool} ${JSON.stringify(input)}`).toBe(true);
    }
    for (const [tool, input] of [
      ['grep', { pattern: 'SESSION-CONVERSATION' }],
      ['glob', { pattern: '**/*.json' }],
      ['glob', { pattern: '.keel/**' }],
      ['glob', { pattern: 'sub/.keel/**' }],
    ] as const) {
      const result = await executeTool(t.ctx(), tool, input);
      expect(result.content, `${tool} ${JSON.stringify(input)}`).not.toMatch(/-SESSION-CONVERSATION|session\.json/);
    }
    expect(await executeTool(t.ctx(), 'read_file', { path: '.keel/artifacts/out.txt' })).toMatchObject({ is_error: false, content: matching(/ARTIFACT/) });
  });
});

describe('the sandbox', () => {
  it('mounts every .git read-only and hides every nested .keel/ and the root store, in workspace-write', async () => {
    const result = await executeTool(t.ctx({ sandbox: { level: 'workspace-write', network: false } }), 'run_command', {
      command: [
        `printf '${fsmonitor}' >> .git/config || echo ROOT-GIT-REFUSED`,
        `echo '#!/bin/sh' > .git/hooks/pre-commit || echo HOOK-REFUSED`,
        `printf x >> sub/.git/config || echo SUB-GIT-REFUSED`,
        `echo '{"mode":"full-auto"}' > sub/.keel/policy.json || echo SUB-KEEL-REFUSED`,
        `cat sub/.keel/store/other-session.json .keel/store/root-session.json 2>/dev/null; echo READ-DONE`,
        `cat .keel/artifacts/out.txt`,
        `echo ok > made.txt && echo WORKSPACE-WRITABLE`,
      ].join('; '),
    });
    for (const word of ['ROOT-GIT-REFUSED', 'HOOK-REFUSED', 'SUB-GIT-REFUSED', 'SUB-KEEL-REFUSED', 'READ-DONE', 'ARTIFACT', 'WORKSPACE-WRITABLE']) expect(result.content).toContain(word);
    expect(result.content).not.toContain('CONVERSATION');
    expect(await fs.readFile(path.join(t.dir, '.git/config'), 'utf8')).toBe('[core]\n');
    expect(await fs.readFile(path.join(t.dir, 'sub/.git/config'), 'utf8')).toBe('[core]\n');
    expect(await fs.readdir(path.join(t.dir, 'sub/.keel'))).toEqual(['store']);
    expect(await fs.readdir(path.join(t.dir, '.git/hooks'))).toEqual([]);
  });

  it('lists the mounts it adds: each .git (also a symlinked one inside), each nested .keel and its workspace, the root store', async () => {
    const mounts = await findProtectedPaths(t.dir, t.dir);
    expect(mounts.map((m) => `${m.kind} ${m.rel}`).sort()).toEqual(['hide .keel/store', 'hide sub/.keel', 'nested-root sub', 'read-only .git', 'read-only deep/er/.git', 'read-only sub/.git'].sort());
    // Nested workspaces first: a mount on one later would cover what was mounted under it.
    expect(mounts[0]).toEqual({ kind: 'nested-root', rel: 'sub' });
  });
});
