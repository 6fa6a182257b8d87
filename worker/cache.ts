// How many workflows a worker keeps cached (sticky), so its memory stays bounded. A cached
// session answers a message at once; an evicted one is replayed from its history first
// (slower, but nothing is lost). The SDK's default sizes the cache from the V8 heap limit
// alone (≈ 600 workflows per GiB of heap), which says nothing of what a workflow holds. A
// cached Keel session holds ≈ 133 KiB of V8 heap (`npm run bench:heap`, 30 Nov 2026), since
// all of Keel's workflow code is evaluated once per worker (worker/workflow-bundle.ts
// PRELOADED_WORKFLOW_MODULES); it was 2.15 MiB when every workflow evaluated the schemas and
// machine tables, and 281 KiB while it evaluated the workflow modules. Its worker RSS was
// ≈ 370 KiB (bench `parked`, 2,000 sessions all cached, before the workflow modules were
// shared). So a memory budget is turned into a count with an estimate, and the default is a
// budget, not the SDK's count.
import { getHeapStatistics } from 'node:v8';
import { keelEnv } from '../shared/env';

/**
 * Worker RSS one cached Keel session costs, rounded up from what was measured (bench `parked`,
 * 2,000 sessions cached: 366 KiB each, before the workflow modules were shared; not lowered
 * since: a smaller estimate would cache more sessions in the same budget, and an evicted one
 * resumes in about the same time, 84 ms p50 against 81 at 10,000 parked).
 */
export const CACHED_SESSION_BYTES = 512 * 1024;

/**
 * The default budget: 1 GiB, or a third of the V8 heap limit when that is smaller
 * (`--max-old-space-size` set low). RSS is the worker's base (≈ 450 MiB) plus the cache
 * plus the garbage V8 lets build up while evicted sessions come and go: with 2,000 parked
 * sessions a 1.5 GiB budget let RSS reach 3.0 GiB (docs/performance.md). Sessions past the
 * budget are replayed when a message comes.
 */
export function defaultCacheBudget(heapLimitBytes = getHeapStatistics().heap_size_limit): WorkflowCacheSize {
  return { memoryBytes: Math.min(1024 ** 3, Math.floor(heapLimitBytes / 3)) };
}

export class CacheConfigError extends Error {
  override readonly name = 'CacheConfigError';
}

/** How the cache is sized: a count of workflows, or a memory budget in bytes. */
export type WorkflowCacheSize = { maxCachedWorkflows: number } | { memoryBytes: number };

const UNITS: Record<string, number> = { '': 1, b: 1, k: 1024, kb: 1024, kib: 1024, m: 1024 ** 2, mb: 1024 ** 2, mib: 1024 ** 2, g: 1024 ** 3, gb: 1024 ** 3, gib: 1024 ** 3 };

/**
 * KEEL_WORKFLOW_CACHE: a count (`2000`) or a memory budget (`1.5GiB`, `800MiB`); unset,
 * undefined (the caller takes `defaultCacheBudget()`). `0` turns the cache off (every task
 * replays the history).
 */
export function workflowCacheFromEnv(env: NodeJS.ProcessEnv = process.env): WorkflowCacheSize | undefined {
  const raw = keelEnv(env, 'KEEL_WORKFLOW_CACHE')?.trim();
  if (raw === undefined) return undefined;
  if (/^\d+$/.test(raw)) return { maxCachedWorkflows: Number(raw) };
  const m = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(raw);
  const unit = m ? UNITS[(m[2] ?? '').toLowerCase()] : undefined;
  if (!m || unit === undefined || m[2] === '') {
    throw new CacheConfigError(`KEEL_WORKFLOW_CACHE must be a number of workflows (e.g. 2000) or a memory budget (e.g. 1.5GiB, 800MiB); got "${raw}"`);
  }
  return { memoryBytes: Number(m[1]) * unit };
}

/** The SDK's `maxCachedWorkflows` for a size. */
export function maxCachedWorkflows(size: WorkflowCacheSize, perWorkflowBytes = CACHED_SESSION_BYTES): number {
  const count = 'maxCachedWorkflows' in size ? size.maxCachedWorkflows : Math.floor(size.memoryBytes / perWorkflowBytes);
  if (!Number.isInteger(count) || count < 0) throw new CacheConfigError(`the workflow cache size must be a whole number of workflows ≥ 0; got ${count}`);
  // The SDK takes 0 (off) or at least 2: one is rounded up; a budget under one session is 0, the cache off.
  if (count === 1) return 2;
  return count;
}
