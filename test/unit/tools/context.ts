// A tool context on a fresh temporary workspace, for tests without Temporal.
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { expect } from 'vitest';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type ToolContext, DEFAULT_ENV_ALLOW_LIST } from '../../../activities/tools/context';
import { openWorkspace } from '../../../activities/tools/workspace';

export interface TestWorkspace {
  dir: string;
  /** A sibling directory outside the workspace, for escape attempts. */
  outside: string;
  ctx(overrides?: Partial<ToolContext>): ToolContext;
  progress: unknown[];
  cleanup(): Promise<void>;
}

export async function makeWorkspace(): Promise<TestWorkspace> {
  const base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-tools-')));
  const dir = path.join(base, 'ws');
  const outside = path.join(base, 'outside');
  await fs.mkdir(dir);
  await fs.mkdir(outside);
  const ws = await openWorkspace(dir);
  const progress: unknown[] = [];
  return {
    dir,
    outside,
    progress,
    ctx: (overrides = {}) => ({
      ws,
      callKey: `test/${randomUUID()}`,
      progress: (details) => progress.push(details),
      signal: new AbortController().signal,
      envAllowList: DEFAULT_ENV_ALLOW_LIST,
      outputCapBytes: 30_000,
      ...overrides,
    }),
    cleanup: () => fs.rm(base, { recursive: true, force: true }),
  };
}

/** Alive means running: a zombie waiting to be reaped has already been killed. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).charAt(0) !== 'Z';
  } catch {
    return false;
  }
}

export async function waitFor(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return check();
}

/** An asymmetric matcher typed as the string it stands for (expect's own is `any`). */
export function matching(pattern: RegExp): string {
  const matcher: unknown = expect.stringMatching(pattern);
  return matcher as string;
}

/**
 * The host pid of a running process whose command line has `marker` as one argument (a
 * unique sleep duration, say). A sandboxed command has its own pid namespace, so `$$`
 * inside it is not a host pid; tests find its processes this way instead. 0 when none.
 */
export function hostPidWith(marker: string): number {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').includes(marker) && isAlive(Number(entry))) return Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  return 0;
}
