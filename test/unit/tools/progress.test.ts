// Tool progress: heartbeat details of long reads and commands, and the rationed
// tool.progress events for the workflow's stream.
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PROGRESS_EVENTS_AFTER_MS, PROGRESS_EVENTS_EVERY_MS, ToolProgressEvents, type ToolProgressEvent } from '../../../activities/tools/progress';
import { executeTool } from '../../../activities/tools/run-tool';
import { makeWorkspace, type TestWorkspace } from './context';

let t: TestWorkspace;
beforeEach(async () => {
  t = await makeWorkspace();
});
afterEach(async () => {
  await t.cleanup();
});

describe('tool.progress events', () => {
  it('none in the first 2 s, then at most one every 2 s, with the figures of the latest details', () => {
    let now = 1_000;
    const sent: ToolProgressEvent[] = [];
    const events = new ToolProgressEvents((e) => sent.push(e), { callId: 'toolu_1', tool: 'run_command' }, () => now);
    // Heartbeat details every 500 ms for 5 s, as run_command reports them.
    for (let i = 1; i <= 10; i++) {
      now += 500;
      events.offer({ tool: 'run_command', pid: 1, bytes: i * 10, lines: i, tail: '…' });
    }
    expect(PROGRESS_EVENTS_AFTER_MS).toBe(2_000);
    expect(PROGRESS_EVENTS_EVERY_MS).toBe(2_000);
    expect(sent).toEqual([
      { kind: 'tool.progress', callId: 'toolu_1', tool: 'run_command', elapsedMs: 2_000, bytes: 40, lines: 4, files: null },
      { kind: 'tool.progress', callId: 'toolu_1', tool: 'run_command', elapsedMs: 4_000, bytes: 80, lines: 8, files: null },
    ]);
    expect(events.sent).toBe(2);
  });

  it('a quick tool sends nothing, and details without figures are skipped', () => {
    let now = 0;
    const sent: ToolProgressEvent[] = [];
    const events = new ToolProgressEvents((e) => sent.push(e), { callId: 'c', tool: 'grep' }, () => now);
    now = 1_900;
    events.offer({ tool: 'grep', bytes: 5, files: 1 });
    now = 2_500;
    events.offer(undefined);
    events.offer({ pid: 3 });
    expect(sent).toEqual([]);
    events.offer({ tool: 'grep', bytes: 7, files: 2 });
    expect(sent).toEqual([{ kind: 'tool.progress', callId: 'c', tool: 'grep', elapsedMs: 2_500, bytes: 7, lines: null, files: 2 }]);
  });

  it('each distinct connection the proxy allowed or refused is an event at once, not rationed; repeats are not', () => {
    let now = 0;
    const sent: ToolProgressEvent[] = [];
    const events = new ToolProgressEvents((e) => sent.push(e), { callId: 'toolu_n', tool: 'mcp__fetch__get' }, () => now);
    const refused = { host: 'localhost', port: 7233, decision: 'refused' as const, reason: 'loopback' };
    now = 10;
    events.offer({ tool: 'mcp__fetch__get', network: refused });
    events.offer({ tool: 'mcp__fetch__get', network: refused });
    now = 20;
    events.offer({ tool: 'mcp__fetch__get', network: { host: 'registry.npmjs.org', port: 443, decision: 'allowed', address: '104.16.0.1' } });
    expect(sent).toEqual([
      { kind: 'tool.progress', callId: 'toolu_n', tool: 'mcp__fetch__get', elapsedMs: 10, bytes: 0, lines: null, files: null, network: refused },
      { kind: 'tool.progress', callId: 'toolu_n', tool: 'mcp__fetch__get', elapsedMs: 20, bytes: 0, lines: null, files: null, network: { host: 'registry.npmjs.org', port: 443, decision: 'allowed', address: '104.16.0.1' } },
    ]);
  });
});

describe('heartbeat details of long tools', () => {
  it('read_file and grep report the bytes they have read', async () => {
    const big = 'line of text\n'.repeat(400_000); // 5.2 MB: several chunks
    await fs.writeFile(path.join(t.dir, 'big.txt'), big);
    // The last line: read_file streams, and reads the whole file only to get there.
    const read = await executeTool(t.ctx(), 'read_file', { path: 'big.txt', offset: 400_000, limit: 1 });
    expect(read.facts).toEqual({ kind: 'read', bytes: big.length, files: 1 });
    const readProgress = t.progress.filter((p) => (p as { tool?: string }).tool === 'read_file') as { bytes: number }[];
    expect(readProgress.length).toBeGreaterThanOrEqual(1);
    expect(readProgress[0]!.bytes).toBeGreaterThan(0);

    t.progress.length = 0;
    const found = await executeTool(t.ctx(), 'grep', { pattern: 'nowhere' });
    expect(found.facts).toEqual({ kind: 'read', bytes: big.length, files: 1 });
    const grepProgress = t.progress.filter((p) => (p as { tool?: string }).tool === 'grep') as { bytes: number; files: number }[];
    expect(grepProgress.length).toBeGreaterThanOrEqual(1);
    expect(grepProgress[0]).toMatchObject({ tool: 'grep', files: 1 });
  });

  it('run_command reports output bytes and complete lines so far', async () => {
    await executeTool(t.ctx(), 'run_command', { command: 'printf "a\\nb\\n"; sleep 0.8; printf "c\\n"' });
    const last = t.progress.at(-1) as { bytes: number; lines: number };
    expect(last).toMatchObject({ tool: 'run_command', bytes: 6, lines: 3 });
    const during = t.progress.find((p) => (p as { lines: number }).lines === 2);
    expect(during).toBeDefined();
  });
});
