// What the workflow bundle shares between workflows (worker/workflow-bundle.ts
// PRELOADED_WORKFLOW_MODULES): the run's own bundle of Keel's workflows, run as the SDK runs
// it with its reusable V8 context (bench/heap/bundle-vm.ts). Every module a session, a goal
// or an agent evaluates is evaluated once per worker thread, not once per cached workflow;
// nothing the shared modules export breaks once the SDK freezes it; and the policy's glob
// matching (picomatch, machines/policy/glob.ts) answers the same frozen as unfrozen.
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { freezeAsTheSdkDoes, runBundle, type BundleVm } from '../../bench/heap/bundle-vm';
import { pathGlobMatches } from '../../machines/policy/index';
import { keelWorkflowBundleFile } from '../helpers/temporal';

const isRegExp = (value: unknown): value is RegExp => Object.prototype.toString.call(value) === '[object RegExp]';
const isObject = (value: unknown): value is object => value !== null && (typeof value === 'object' || typeof value === 'function');
/** A lazySchema stand-in (machines/lazy-schema.ts): a zod schema that shows no keys, so the freeze stops at it. */
const isStandIn = (value: unknown) => isObject(value) && '_zod' in value && Reflect.ownKeys(value).length === 0;

/**
 * What the SDK's freeze reaches from a module's exports, object by object, reading each own
 * property as the freeze does (webpack's exports are getters). A getter that hands out a
 * fresh value at every read (machines/policy/glob.ts) gives the freeze a copy nobody else
 * holds, so the walk does not follow it.
 */
function frozenReach(root: unknown): { path: string; value: unknown }[] {
  const seen = new Set<unknown>();
  const found: { path: string; value: unknown }[] = [];
  const walk = (value: unknown, at: string) => {
    if (!isObject(value) || seen.has(value)) return;
    seen.add(value);
    found.push({ path: at, value });
    if (typeof value === 'function' || isStandIn(value)) return; // the SDK freezes a function without walking it
    for (const key of Reflect.ownKeys(value)) {
      const read = () => (value as Record<PropertyKey, unknown>)[key];
      const first = read();
      if (isObject(first) && read() !== first) continue;
      walk(first, `${at}.${String(key)}`);
    }
  };
  walk(root, 'exports');
  return found;
}

async function keelBundle(): Promise<BundleVm> {
  return runBundle(await readFile(await keelWorkflowBundleFile(), 'utf8'));
}

describe('the modules the workflow bundle shares between workflows', () => {
  it("are every module a session, a goal and an agent evaluate: a new workflow evaluates none of Keel's", async () => {
    const { shared, importAsWorkflow } = await keelBundle();
    const keel = [...shared.keys()].filter((id) => /^\.\/(workflows|machines)\//.test(id));
    for (const module of ['./workflows/session.ts', './workflows/goal.ts', './workflows/agent.ts', './machines/policy/index.ts', './workflows/trace.ts', './workflows/sink-batches.ts']) {
      expect(keel).toContain(module);
    }
    // What the SDK does for each workflow it creates or replays (initRuntime).
    expect([...importAsWorkflow().keys()]).toEqual([]);
  });

  it('export no zod schema built at load and no RegExp that a freeze would break', async () => {
    const { shared } = await keelBundle();
    const eager: string[] = [];
    const regexps: string[] = [];
    let standIns = 0;
    for (const [id, module] of shared) {
      for (const { path, value } of frozenReach(module.exports)) {
        if (isStandIn(value)) standIns++;
        else if (isObject(value) && '_zod' in value) eager.push(`${id}: ${path}`);
        // A global or sticky RegExp writes lastIndex at every use: frozen, it throws.
        if (isRegExp(value) && (value.global || value.sticky)) regexps.push(`${id}: ${path} is ${String(value)}`);
      }
    }
    expect(eager).toEqual([]);
    expect(regexps).toEqual([]);
    // And the walk sees what it looks for: the shared modules do export schemas.
    expect(standIns).toBeGreaterThan(40);
  });

  it('match globs once frozen as they do unfrozen, on every path picomatch takes', async () => {
    const { shared } = await keelBundle();
    for (const module of shared.values()) freezeAsTheSdkDoes(module);
    const frozen = (shared.get('./machines/policy/matching.ts')?.exports as { pathGlobMatches: typeof pathGlobMatches }).pathGlobMatches;
    const cases: [string, string][] = [
      ['foo*.ts', 'foo1.ts'], // picomatch's fast path: its g RegExp of special characters
      ['README.md', 'README.md'],
      ['a.b?', 'a.bc'],
      ['src/**/*.ts', 'src/a/b.ts'],
      ['src/**', 'lib/x.ts'],
      ['*.{js,ts}', 'x.ts'],
      ['[ab]*.txt', 'a1.txt'],
      ['docs/\\*.md', 'docs/*.md'], // an escaped star
      ['!(*.md)', 'x.ts'],
      ['**/.env*', 'config/.env.local'],
    ];
    for (const [pattern, file] of cases) {
      // Twice: a g RegExp that kept its lastIndex would answer the second call differently.
      expect([frozen(pattern, file), frozen(pattern, file)], `${pattern} against ${file}`).toEqual([pathGlobMatches(pattern, file), pathGlobMatches(pattern, file)]);
    }
    expect(cases.filter(([pattern, file]) => frozen(pattern, file)).length).toBeGreaterThan(5);
  });
});
