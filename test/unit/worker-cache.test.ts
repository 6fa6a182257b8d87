import { describe, expect, it } from 'vitest';
import { CACHED_SESSION_BYTES, CacheConfigError, defaultCacheBudget, maxCachedWorkflows, workflowCacheFromEnv } from '../../worker/cache';

describe('the worker cache size (KEEL_WORKFLOW_CACHE, createKeelWorker({ workflowCache }))', () => {
  it('takes a count or a memory budget; unset is left to the default budget', () => {
    expect(workflowCacheFromEnv({})).toBeUndefined();
    expect(workflowCacheFromEnv({ KEEL_WORKFLOW_CACHE: '' })).toBeUndefined();
    expect(workflowCacheFromEnv({ KEEL_WORKFLOW_CACHE: '2000' })).toEqual({ maxCachedWorkflows: 2000 });
    expect(workflowCacheFromEnv({ KEEL_WORKFLOW_CACHE: '1.5GiB' })).toEqual({ memoryBytes: 1.5 * 1024 ** 3 });
    expect(workflowCacheFromEnv({ KEEL_WORKFLOW_CACHE: '800 mb' })).toEqual({ memoryBytes: 800 * 1024 ** 2 });
  });

  it('defaults to a 1 GiB budget (2,048 sessions), or a third of a smaller heap', () => {
    expect(maxCachedWorkflows(defaultCacheBudget(4 * 1024 ** 3))).toBe(2048);
    // --max-old-space-size=512: the cache never takes more than a third of the heap.
    expect(maxCachedWorkflows(defaultCacheBudget(512 * 1024 ** 2))).toBe(341);
    // Never more than the 1 GiB budget allows, whatever this process's heap limit.
    expect(maxCachedWorkflows(defaultCacheBudget())).toBeLessThanOrEqual(2048);
  });

  it('turns a memory budget into a count at the measured cost of a cached session', () => {
    expect(maxCachedWorkflows({ memoryBytes: 2 * 1024 ** 3 })).toBe(Math.floor((2 * 1024 ** 3) / CACHED_SESSION_BYTES));
    expect(maxCachedWorkflows({ memoryBytes: 2 * 1024 ** 3 })).toBe(4096);
    expect(maxCachedWorkflows({ memoryBytes: 100 * 1024 ** 2 }, 1024 ** 2)).toBe(100);
    expect(maxCachedWorkflows({ maxCachedWorkflows: 0 })).toBe(0);
    // The SDK takes 0 or at least 2.
    expect(maxCachedWorkflows({ memoryBytes: 600 * 1024 })).toBe(2);
    expect(maxCachedWorkflows({ memoryBytes: 1024 })).toBe(0);
  });

  it('refuses what is not a size, with the variable named', () => {
    for (const bad of ['lots', '-5', '2TB', '1.5', '10 sessions']) {
      expect(() => workflowCacheFromEnv({ KEEL_WORKFLOW_CACHE: bad }), bad).toThrow(CacheConfigError);
      expect(() => workflowCacheFromEnv({ KEEL_WORKFLOW_CACHE: bad }), bad).toThrow(/KEEL_WORKFLOW_CACHE/);
    }
    expect(() => maxCachedWorkflows({ maxCachedWorkflows: -1 })).toThrow(CacheConfigError);
    expect(() => maxCachedWorkflows({ maxCachedWorkflows: 2.5 })).toThrow(CacheConfigError);
  });
});
