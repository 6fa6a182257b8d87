// Schemas built on first use, and the modules the workflow bundle shares between workflows
// (machines/lazy-schema.ts, worker/workflow-bundle.ts PRELOADED_WORKFLOW_MODULES).
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { lazySchema, once } from '../../../machines/lazy-schema';
import { PRELOADED_WORKFLOW_MODULES } from '../../../worker/workflow-bundle';

/** What the SDK does to every preloaded module's exports (reusable-vm.js deepFreeze, same walk). */
function freezeAsTheSdkDoes(object: unknown, visited = new WeakSet<object>()): void {
  if (object === null || (typeof object !== 'object' && typeof object !== 'function') || visited.has(object)) return;
  visited.add(object);
  if (Object.isFrozen(object)) return;
  if (typeof object === 'object') {
    for (const key of Reflect.ownKeys(object)) {
      const value = (object as Record<PropertyKey, unknown>)[key];
      try {
        freezeAsTheSdkDoes(value, visited);
      } catch {
        // The SDK ignores what cannot be frozen, as here.
      }
    }
  }
  Object.freeze(object);
}

/** Every value reachable from `root` by own properties (what the SDK's freeze reaches). */
function reachable(root: unknown): unknown[] {
  const seen = new Set<unknown>();
  const walk = (value: unknown) => {
    if (value === null || (typeof value !== 'object' && typeof value !== 'function') || seen.has(value)) return;
    seen.add(value);
    for (const key of Reflect.ownKeys(value)) walk((value as Record<PropertyKey, unknown>)[key]);
  };
  walk(root);
  return [...seen];
}

const isStandIn = (value: unknown) => typeof value === 'object' && value !== null && '_zod' in value && Reflect.ownKeys(value).length === 0;

describe('lazySchema', () => {
  it('builds the schema when first used, once', () => {
    let builds = 0;
    const schema = lazySchema(() => {
      builds++;
      return z.object({ name: z.string() });
    });
    const composed = lazySchema(() => z.object({ inner: schema }));
    expect(builds).toBe(0);
    expect(composed.parse({ inner: { name: 'a' } })).toEqual({ inner: { name: 'a' } });
    expect(schema.parse({ name: 'b' })).toEqual({ name: 'b' });
    expect(builds).toBe(1);
  });

  it('is the schema to every caller: errors, composition, JSON schema, instanceof, recursion', () => {
    type Tree = { label: string; children: Tree[] };
    const tree: z.ZodType<Tree> = lazySchema(() => z.lazy(() => z.strictObject({ label: z.string().min(1), children: z.array(tree) })));
    const direct = z.strictObject({ id: z.string().regex(/^[a-z]+$/), n: z.number().int().optional() });
    const lazy = lazySchema(() => z.strictObject({ id: z.string().regex(/^[a-z]+$/), n: z.number().int().optional() }));
    expect(z.toJSONSchema(lazy)).toEqual(z.toJSONSchema(direct));
    expect(lazy.safeParse({ id: 'A1', extra: 1 }).error?.issues).toEqual(direct.safeParse({ id: 'A1', extra: 1 }).error?.issues);
    expect(lazy.extend({ more: z.boolean() }).parse({ id: 'ok', more: true })).toEqual({ id: 'ok', more: true });
    expect(lazy.optional().parse(undefined)).toBeUndefined();
    expect(lazy instanceof z.ZodObject).toBe(true);
    expect(Object.keys(lazy.shape)).toEqual(['id', 'n']);
    expect(tree.parse({ label: 'a', children: [{ label: 'b', children: [] }] })).toEqual({ label: 'a', children: [{ label: 'b', children: [] }] });
    expect(tree.safeParse({ label: 'a', children: [{ label: '', children: [] }] }).success).toBe(false);
  });

  it('still parses after the freeze the SDK gives the modules it shares between workflows', () => {
    const exports = { schema: lazySchema(() => z.object({ at: z.number().nonnegative(), tags: z.array(z.string().regex(/^#\w+$/)) })) };
    freezeAsTheSdkDoes({ exports });
    expect(exports.schema.parse({ at: 1, tags: ['#a'] })).toEqual({ at: 1, tags: ['#a'] });
    expect(exports.schema.safeParse({ at: -1, tags: ['a'] }).error?.issues).toHaveLength(2);
    expect(z.toJSONSchema(exports.schema)).toMatchObject({ type: 'object', required: ['at', 'tags'] });
  });

  it('once: builds a value on first call and returns the same one after', () => {
    let builds = 0;
    const shape = once(() => ({ n: ++builds }));
    expect(builds).toBe(0);
    expect(shape()).toBe(shape());
    expect(builds).toBe(1);
  });
});

describe('the modules the workflow bundle preloads', () => {
  it('export their zod schemas as stand-ins, and no RegExp a frozen copy would break', async () => {
    const loaded = await Promise.all(PRELOADED_WORKFLOW_MODULES.map(async (file) => ({ file, exports: (await import(file)) as Record<string, unknown> })));
    const eager: string[] = [];
    const regexps: string[] = [];
    for (const { file, exports } of loaded) {
      for (const [name, value] of Object.entries(exports)) {
        if (typeof value === 'object' && value !== null && '_zod' in value && !isStandIn(value)) eager.push(`${file}: ${name}`);
        for (const r of reachable(value)) if (r instanceof RegExp && (r.global || r.sticky)) regexps.push(`${file}: ${name} holds ${String(r)}`);
      }
    }
    // A schema built at module level would be frozen by the SDK and fail its first parse.
    expect(eager).toEqual([]);
    // A global or sticky RegExp writes lastIndex on every use: frozen, it throws.
    expect(regexps).toEqual([]);
    // And the check sees what it looks for: the preloaded modules do export schemas.
    expect(loaded.flatMap(({ exports }) => Object.values(exports).filter(isStandIn)).length).toBeGreaterThan(40);
  });
});
