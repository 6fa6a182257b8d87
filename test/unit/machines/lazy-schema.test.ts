// Schemas built on first use, and the modules the workflow bundle shares between workflows
// (machines/lazy-schema.ts, worker/workflow-bundle.ts PRELOADED_WORKFLOW_MODULES; what the
// bundle shares is checked in test/integration/shared-modules.test.ts).
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { lazySchema, once } from '../../../machines/lazy-schema';
import { freezeAsTheSdkDoes } from '../../../bench/heap/bundle-vm';

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
