// A read run as a local activity holds its workflow task: it reads only what was asked, and a
// read that would scan past its budget (bytes or time) stops, so that the workflow runs it as an
// activity (machines/local-budget.ts, activities/tools/local-budget.ts, read-file.ts).
import fs from 'node:fs/promises';
import path from 'node:path';
import { ActivityFailure, ApplicationFailure, RetryState } from '@temporalio/common';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalBudgetExceeded, localBudgetFailure, localBudgetFrom } from '../../../activities/tools/local-budget';
import { executeTool } from '../../../activities/tools/run-tool';
import { isLocalBudgetExceeded, LOCAL_BUDGET, LOCAL_BUDGET_EXCEEDED, withinLocalBudget } from '../../../machines/local-budget';
import { makeWorkspace, type TestWorkspace } from './context';

let t: TestWorkspace;
beforeEach(async () => {
  t = await makeWorkspace();
});
afterEach(async () => {
  await t.cleanup();
});

/** A 60 MB log of short numbered lines, written in pieces. */
async function bigLog(): Promise<{ rel: string; size: number; lines: number }> {
  const rel = 'big.log';
  const handle = await fs.open(path.join(t.dir, rel), 'w');
  let n = 0;
  try {
    for (let piece = 0; piece < 40; piece += 1) {
      const lines: string[] = [];
      for (let i = 0; i < 100_000; i += 1) lines.push(`line ${(n += 1)} ..`);
      await handle.write(`${lines.join('\n')}\n`);
    }
  } finally {
    await handle.close();
  }
  return { rel, size: (await fs.stat(path.join(t.dir, rel))).size, lines: n };
}

describe('the local budget (pure)', () => {
  it('lets a call go on within its bytes and its time, and not past either', () => {
    expect(withinLocalBudget(LOCAL_BUDGET, { bytes: 0, elapsedMs: 0 })).toBe(true);
    expect(withinLocalBudget(LOCAL_BUDGET, { bytes: LOCAL_BUDGET.bytes, elapsedMs: LOCAL_BUDGET.ms })).toBe(true);
    expect(withinLocalBudget(LOCAL_BUDGET, { bytes: LOCAL_BUDGET.bytes + 1, elapsedMs: 0 })).toBe(false);
    expect(withinLocalBudget(LOCAL_BUDGET, { bytes: 0, elapsedMs: LOCAL_BUDGET.ms + 1 })).toBe(false);
    // Within the 1 s a control may take at 50 sessions, and a few MB.
    expect(LOCAL_BUDGET.ms).toBeLessThanOrEqual(500);
    expect(LOCAL_BUDGET.bytes).toBeLessThanOrEqual(8 * 1024 * 1024);
  });

  it('knows its failure as the workflow receives it (the cause of an ActivityFailure), and nothing else', () => {
    const failure = localBudgetFailure('past its time');
    expect(failure.type).toBe(LOCAL_BUDGET_EXCEEDED);
    expect(failure.nonRetryable).toBe(true);
    const asReceived = new ActivityFailure('activity failed', 'runTool', '1', RetryState.NON_RETRYABLE_FAILURE, undefined, failure);
    expect(isLocalBudgetExceeded(asReceived)).toBe(true);
    expect(isLocalBudgetExceeded(new ActivityFailure('activity failed', 'runTool', '1', RetryState.NON_RETRYABLE_FAILURE, undefined, ApplicationFailure.create({ message: 'disk' })))).toBe(false);
    expect(isLocalBudgetExceeded(new Error('x'))).toBe(false);
    expect(isLocalBudgetExceeded(undefined)).toBe(false);
  });
});

describe('read_file reads only what was asked', () => {
  it('ten lines of a 60 MB file: one chunk read, locally within budget; lines near its end: past the budget, so an activity reads them', async () => {
    const log = await bigLog();
    expect(log.size).toBeGreaterThan(60_000_000);

    const local = () => t.ctx({ localBudget: localBudgetFrom(LOCAL_BUDGET) });
    const head = await executeTool(local(), 'read_file', { path: log.rel, limit: 10 });
    expect(head.is_error).toBe(false);
    expect(head.content.split('\n').slice(0, 10)).toEqual(Array.from({ length: 10 }, (_, i) => `${String(i + 1).padStart(2)}\tline ${i + 1} ..`));
    expect(head.content.split('\n').at(-1)).toBe('[lines 1–10 shown; the file (60.0 MiB) goes on; read on with offset: 11]');
    expect((head.facts as { bytes: number }).bytes).toBeLessThanOrEqual(256 * 1024);

    // The same call near the end: a local call stops at its budget instead of scanning 60 MB in its workflow task.
    await expect(executeTool(local(), 'read_file', { path: log.rel, offset: log.lines - 1, limit: 10 })).rejects.toBeInstanceOf(LocalBudgetExceeded);
    // As an activity (no budget) it reads there, and knows the line count at the end.
    const tail = await executeTool(t.ctx(), 'read_file', { path: log.rel, offset: log.lines - 1, limit: 10 });
    expect(tail.content).toBe(`${log.lines - 1}\tline ${log.lines - 1} ..\n${log.lines}\tline ${log.lines} ..`);
    expect((tail.facts as { bytes: number }).bytes).toBe(log.size);
  });

  it('a local call past its time stops too', async () => {
    await fs.writeFile(path.join(t.dir, 'a.txt'), 'x\n'.repeat(3 * 1024 * 1024));
    const expired = t.ctx({ localBudget: { bytes: LOCAL_BUDGET.bytes, deadline: Date.now() - 1 } });
    await expect(executeTool(expired, 'read_file', { path: 'a.txt', offset: 3 * 1024 * 1024 })).rejects.toBeInstanceOf(LocalBudgetExceeded);
  });

  it('a small file is read to its end, so the answer gives its line count, as before; a long line is cut with its length', async () => {
    const long = 'é'.repeat(5000);
    await fs.writeFile(path.join(t.dir, 's.txt'), `a\n${long}\nc`);
    const result = await executeTool(t.ctx({ localBudget: localBudgetFrom(LOCAL_BUDGET) }), 'read_file', { path: 's.txt', limit: 2 });
    expect(result.content).toBe(`1\ta\n2\t${'é'.repeat(2000)}… [line cut: 5000 chars]\n[lines 1–2 of 3 shown; read on with offset: 3]`);
    expect(await executeTool(t.ctx(), 'read_file', { path: 's.txt', offset: 3 })).toMatchObject({ is_error: false, content: '3\tc' });
    const past = await executeTool(t.ctx(), 'read_file', { path: 's.txt', offset: 4 });
    expect(past.is_error).toBe(true);
    expect(past.content).toMatch(/past the end of s\.txt, which has 3 lines/);
  });
});
