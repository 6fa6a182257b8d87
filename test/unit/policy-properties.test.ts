// Property tests: whatever rules and paths, a workspace glob never allows a path
// outside the workspace, and a matching deny rule always wins.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { evaluatePolicy, normalizeWorkspacePath, parsePolicy, policyModes, type PolicyConfig } from '../../machines/policy';

const segment = fc.oneof(
  fc.constantFrom('..', '.', '', 'src', 'a', '.keel', 'etc', '*', 'node_modules'),
  fc.stringMatching(/^[a-z0-9._-]{1,6}$/),
);
const relPath = fc.array(segment, { minLength: 1, maxLength: 6 }).map((parts) => parts.join('/'));
const anyPath = fc.oneof(relPath, relPath.map((p) => `/${p}`), relPath.map((p) => `../${p}`));
const glob = fc.oneof(
  fc.constantFrom('**', '*', '**/*', 'src/**', '**/..', '../**', '{a,..}/**', '.*/**', '**/*.ts', '/**', '?(..)/**'),
  fc.array(fc.oneof(segment, fc.constant('**')), { minLength: 1, maxLength: 4 }).map((parts) => parts.join('/')),
).filter((g) => g.trim() !== '');
const pathTool = fc.constantFrom('read_file', 'write_file', 'edit_file', 'list_dir', 'glob', 'grep');
const mode = fc.constantFrom(...policyModes);

function build(input: unknown): PolicyConfig {
  const parsed = parsePolicy(input);
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.policy;
}

/** Escapes the workspace by the same rules a shell would resolve the path with. */
function escapes(path: string): boolean {
  if (path.startsWith('/') || path.startsWith('~')) return true;
  let depth = 0;
  for (const part of path.split('/')) {
    if (part === '..') depth -= 1;
    else if (part !== '' && part !== '.') depth += 1;
    if (depth < 0) return true;
  }
  return false;
}

describe('policy properties', () => {
  it('no path outside the workspace is ever allowed by a workspace glob', () => {
    fc.assert(
      fc.property(pathTool, anyPath, fc.array(glob, { minLength: 1, maxLength: 4 }), mode, (tool, path, globs, m) => {
        const policy = build({ mode: m, allow: globs.map((g) => `${tool}(${g})`) });
        const verdict = evaluatePolicy(policy, { tool, input: { path, pattern: 'x', content: '', old_string: 'a', new_string: 'b' } });
        if (escapes(path)) {
          expect(normalizeWorkspacePath(path).type).toBe('outside');
          expect(verdict.decision).toBe('deny');
        }
        if (verdict.decision === 'allow' && verdict.grounds.type === 'rule') {
          expect(escapes(path)).toBe(false);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('a matching deny rule always wins, whatever else allows it', () => {
    const word = fc.stringMatching(/^[a-z]{1,5}$/);
    const command = fc.array(fc.array(word, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 4 });
    const separator = fc.constantFrom(' && ', ' || ', '; ', ' | ', ' & ', '\n');
    const wrap = fc.constantFrom(
      (x: string) => x,
      (x: string) => `echo $(${x})`,
      (x: string) => `echo "$(${x})"`,
      (x: string) => `echo \`${x}\``,
      (x: string) => `(${x})`,
      (x: string) => `${x} > out.txt`,
    );
    fc.assert(
      fc.property(command, fc.nat(), separator, mode, fc.boolean(), fc.array(word), wrap, (parts, pick, sep, m, headless, extra, wrapper) => {
        const denied = parts[pick % parts.length] ?? [];
        const policy = build({
          mode: m,
          headless: { ask: 'allow' },
          allow: ['run_command', 'run_command(*)', ...extra.map((w) => `run_command(${w}*)`)],
          ask: extra.map((w) => `run_command(${w})`),
          deny: [`run_command(${denied.join(' ')}*)`],
        });
        const text = parts.map((p, index) => (index === pick % parts.length ? wrapper(p.join(' ')) : p.join(' '))).join(sep);
        const approvals = [{ rule: 'run_command' }, { rule: `run_command(${denied.join(' ')}*)` }];
        const verdict = evaluatePolicy(policy, { tool: 'run_command', input: { command: text } }, { headless, approvals });
        expect(verdict.decision).toBe('deny');
        expect(verdict.grounds).toMatchObject({ type: 'rule', list: 'deny' });
        expect(verdict.matchedRule).toMatch(/^deny: /);
      }),
      { numRuns: 1000 },
    );
  });

  it('a matching deny rule on a path wins in every mode', () => {
    fc.assert(
      fc.property(pathTool, relPath, mode, (tool, path, m) => {
        const normalized = normalizeWorkspacePath(path);
        if (normalized.type === 'outside') return;
        const policy = build({ mode: m, allow: [`${tool}(**)`, tool], deny: [`${tool}(${normalized.path.replace(/[*?[\]{}()!+@]/g, '\\$&')})`] });
        const verdict = evaluatePolicy(policy, { tool, input: { path } }, { approvals: [{ rule: tool }] });
        expect(verdict.decision).toBe('deny');
      }),
      { numRuns: 1000 },
    );
  });
});
