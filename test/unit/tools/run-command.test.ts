// run_command against real child processes: exit codes, argv and shell forms, the
// env allow-list, a 10 MB output, and the whole process group killed on timeout and
// on cancel (checked by pid).
import { readdirSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { executeTool } from '../../../activities/tools/run-tool';
import { type ToolContext } from '../../../activities/tools/context';
import { reapOrphanedCommands, recordRunning, runningDir } from '../../../activities/tools/orphans';
import { isAlive, makeWorkspace, matching, type TestWorkspace, waitFor } from './context';

let t: TestWorkspace;
beforeEach(async () => {
  t = await makeWorkspace();
});
afterEach(async () => {
  await t.cleanup();
});

const run = (input: unknown, ctx: ToolContext = t.ctx()) => executeTool(ctx, 'run_command', input);
/** Group-kill tests read host pids the command prints: inside the sandbox pids are its own. */
const unsandboxed = (overrides: Partial<ToolContext> = {}) => t.ctx({ sandbox: { level: 'off', network: false }, ...overrides });

/** Host pids of processes whose command line holds `marker` (a unique sleep duration). */
function hostPidsWith(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').includes(marker) && isAlive(Number(entry))) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** Pids a command printed as "pid=N" lines. */
function pidsIn(text: string): number[] {
  return [...text.matchAll(/pid=(\d+)/g)].map((m) => Number(m[1]));
}

describe('run_command', () => {
  it('returns combined output and the exit code; non-zero is an error', async () => {
    // The exit code travels as data beside the text (facts), so nobody parses the footer.
    expect(await run({ command: 'echo out; echo err >&2; exit 0' })).toEqual({
      is_error: false,
      content: '$ echo out; echo err >&2; exit 0\nout\nerr\n[exit code 0]',
      facts: { kind: 'command', command: 'echo out; echo err >&2; exit 0', exitCode: 0, timedOut: false, bytes: 8, lines: 2 },
    });
    expect(await run({ command: 'echo failing; exit 3' })).toEqual({
      is_error: true,
      content: '$ echo failing; exit 3\nfailing\n[exit code 3]',
      facts: { kind: 'command', command: 'echo failing; exit 3', exitCode: 3, timedOut: false, bytes: 8, lines: 1 },
    });
  });

  it('runs argv without a shell', async () => {
    const result = await run({ command: ['echo', '$HOME && rm -rf /', ';'] });
    expect(result).toEqual({
      is_error: false,
      content: "$ echo '$HOME && rm -rf /' ';'\n$HOME && rm -rf / ;\n[exit code 0]",
      facts: { kind: 'command', command: "echo '$HOME && rm -rf /' ';'", exitCode: 0, timedOut: false, bytes: 20, lines: 1 },
    });
    expect(await run({ command: ['definitely-not-a-program-keel'] })).toMatchObject({ is_error: true, content: matching(/could not start: spawn definitely-not-a-program-keel ENOENT|execvp definitely-not-a-program-keel: No such file|failed to execute definitely-not-a-program-keel: No such file/) });
    expect(await run({ command: ['definitely-not-a-program-keel'] }, unsandboxed())).toMatchObject({ is_error: true, content: matching(/could not start: spawn definitely-not-a-program-keel ENOENT/) });
  });

  it('runs in a cwd inside the workspace and refuses one outside', async () => {
    await fs.mkdir(path.join(t.dir, 'sub'));
    expect((await run({ command: 'pwd', cwd: 'sub' })).content).toContain(`${t.dir}/sub\n`);
    expect(await run({ command: 'pwd', cwd: '/' })).toMatchObject({ is_error: true, content: matching(/absolute paths are not accepted/) });
    await fs.symlink(t.outside, path.join(t.dir, 'out'));
    expect(await run({ command: 'pwd', cwd: 'out' })).toMatchObject({ is_error: true, content: matching(/outside the workspace/) });
  });

  it('passes only allow-listed environment variables', async () => {
    process.env.KEEL_TEST_SECRET = 'hunter2';
    try {
      const hidden = await run({ command: 'echo "[$KEEL_TEST_SECRET] $PATH"' });
      expect(hidden.content).toContain('[] /');
      const allowed = await run({ command: 'echo "[$KEEL_TEST_SECRET]"' }, t.ctx({ envAllowList: ['PATH', 'KEEL_TEST_SECRET'] }));
      expect(allowed.content).toContain('[hunter2]');
    } finally {
      delete process.env.KEEL_TEST_SECRET;
    }
  });

  it('truncates 10 MB of output with a note and saves all of it as an artifact the model can read', async () => {
    const ctx = t.ctx();
    const result = await run({ command: `head -c 10485760 /dev/zero | tr '\\0' 'a' ; echo; echo THE-END` }, ctx);
    expect(result.is_error).toBe(false);
    expect(result.truncated_bytes).toBeGreaterThan(10_000_000);
    expect(Buffer.byteLength(result.content)).toBeLessThanOrEqual(30_000);
    expect(result.content).toMatch(/\[… [\d,]+ of 10,485,769 bytes cut here\. The full output is saved at \.keel\/artifacts\/run_command-[0-9a-f]+\.txt/);
    expect(result.content).toMatch(/THE-END\n\n\[exit code 0\]$/);
    // The facts are not cut with the text.
    expect(result.facts).toMatchObject({ kind: 'command', exitCode: 0, timedOut: false, bytes: 10_485_769, lines: 2 });
    const artifact = result.artifact ?? '';
    expect((await fs.stat(path.join(t.dir, artifact))).size).toBe(10_485_769);
    // The model reads it back with its own tools.
    const tail = await executeTool(t.ctx(), 'read_file', { path: artifact, offset: 2 });
    expect(tail.content).toBe('2\tTHE-END');
    const found = await executeTool(t.ctx(), 'grep', { pattern: 'THE-END', path: '.keel/artifacts' });
    expect(found.content).toBe(`${artifact}:2: THE-END\n[1 line longer than 1 MiB: only the first MiB of each was matched]`);
  });

  it('streams progress while the command runs', async () => {
    await run({ command: 'echo first; sleep 1.2; echo second' });
    const tails = t.progress.map((p) => (p as { tail: string }).tail);
    expect(tails).toContain('first\n');
    expect(tails.at(-1)).toBe('first\nsecond\n');
  });

  it('on timeout kills the whole process group, grandchildren included', async () => {
    const started = Date.now();
    const result = await run({ command: 'sleep 300 & echo pid=$!; (sleep 300 & echo pid=$!; wait) & echo pid=$$; wait', timeout_seconds: 1 }, unsandboxed());
    expect(result.is_error).toBe(true);
    expect(result.timed_out).toBe(true);
    expect(result.content).toMatch(/\[timed out after 1 s; the command and all processes it started were killed\]$/);
    const pids = pidsIn(result.content);
    expect(pids.length).toBeGreaterThanOrEqual(3);
    expect(await waitFor(() => pids.every((pid) => !isAlive(pid)), 10_000)).toBe(true);
    // Its timeout (1 s) and the kill, seconds on a busy machine: not the 300 s the sleeps wanted.
    expect(Date.now() - started).toBeLessThan(60_000);
  });

  it('escalates to SIGKILL for a command that ignores SIGTERM', async () => {
    const result = await run({ command: "trap '' TERM; sleep 300 & echo pid=$!; echo pid=$$; while :; do sleep 0.1; done", timeout_seconds: 1 }, unsandboxed());
    const pids = pidsIn(result.content);
    expect(pids).toHaveLength(2);
    expect(await waitFor(() => pids.every((pid) => !isAlive(pid)), 10_000)).toBe(true);
  });

  it('on cancel mid-command kills the whole process group', async () => {
    const abort = new AbortController();
    const ctx = unsandboxed({ signal: abort.signal });
    const pending = run({ command: 'sleep 300 & echo pid=$!; echo pid=$$; wait' }, ctx);
    await waitFor(() => t.progress.some((p) => pidsIn((p as { tail: string }).tail).length === 2), 15_000);
    const pids = pidsIn((t.progress.at(-1) as { tail: string }).tail);
    expect(pids.every(isAlive)).toBe(true);
    abort.abort();
    const result = await pending;
    expect(result).toMatchObject({ is_error: true, content: matching(/\[cancelled; the command and all processes it started were killed\]$/) });
    expect(await waitFor(() => pids.every((pid) => !isAlive(pid)), 10_000)).toBe(true);
  });

  it('does not leave background children behind when the command exits', async () => {
    const result = await run({ command: 'sleep 300 > /dev/null 2>&1 & echo pid=$!' }, unsandboxed());
    expect(result.is_error).toBe(false);
    const [pid] = pidsIn(result.content);
    expect(await waitFor(() => !isAlive(pid ?? 0), 10_000)).toBe(true);
  });

  it('records running commands and never reaps those of a live worker', async () => {
    const abort = new AbortController();
    const ctx = t.ctx({ signal: abort.signal });
    const pending = run({ command: 'echo pid=$$; sleep 300' }, ctx);
    await waitFor(() => t.progress.some((p) => pidsIn((p as { tail: string }).tail).length === 1), 15_000);
    // Records live outside the workspace, where no command can forge one.
    await expect(fs.readdir(path.join(t.dir, '.keel/state/running'))).rejects.toThrow(/ENOENT/);
    const running = await fs.readdir(runningDir(ctx.ws));
    expect(running).toHaveLength(1);
    // This worker is alive: its command is not an orphan.
    expect(await reapOrphanedCommands(ctx.ws)).toEqual([]);
    abort.abort();
    await pending;
    // The workspace's record directory goes with its last record: nothing is left in /tmp.
    await expect(fs.readdir(runningDir(ctx.ws))).rejects.toThrow(/ENOENT/);
  });

  it('keeps a record made while the workspace\'s last other record is removed with its directory', async () => {
    const ws = t.ctx().ws;
    for (let i = 0; i < 40; i++) {
      const done = await recordRunning(ws, `first-${i}`, process.pid, 'true', 'token');
      const [, doneSecond] = await Promise.all([done(), recordRunning(ws, `second-${i}`, process.pid, 'true', 'token')]);
      expect(await fs.readdir(runningDir(ws))).toHaveLength(1);
      await doneSecond();
      await expect(fs.readdir(runningDir(ws))).rejects.toThrow(/ENOENT/);
    }
  });

  it('a command\'s own timeout ends as timed_out, in the sandbox too, and nothing it started survives', async () => {
    const marker = '3001.417';
    const result = await run({ command: `sleep ${marker} & (sleep ${marker} & wait) & wait`, timeout_seconds: 1 });
    expect(result).toMatchObject({ is_error: true, timed_out: true, content: matching(/\[timed out after 1 s; the command and all processes it started were killed\]$/) });
    expect(result.facts).toMatchObject({ kind: 'command', exitCode: null, timedOut: true });
    expect(await waitFor(() => hostPidsWith(marker).length === 0, 10_000)).toBe(true);
  });

  it('on cancel kills everything a sandboxed command started', async () => {
    const marker = '3002.417';
    const abort = new AbortController();
    const pending = run({ command: `sleep ${marker} & sleep ${marker} & echo started; wait` }, t.ctx({ signal: abort.signal }));
    expect(await waitFor(() => hostPidsWith(marker).length === 2, 15_000)).toBe(true);
    abort.abort();
    expect(await pending).toMatchObject({ is_error: true, content: matching(/cancelled/) });
    expect(await waitFor(() => hostPidsWith(marker).length === 0, 10_000)).toBe(true);
  });

  it('a forged running record cannot make the next command kill another process', async () => {
    // A victim of the same user, and a record naming it as if its worker had died.
    const { spawn } = await import('node:child_process');
    const victim = spawn('sleep', ['3003.417'], { detached: true, stdio: 'ignore' });
    try {
      const pid = victim.pid ?? 0;
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const startTicks = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
      const forged = { pgid: pid, startTicks, workerPid: 999_999, workerStartTicks: '1', host: (await import('node:os')).hostname(), command: 'x', callKey: 'x' };
      // Where the old code looked (the workspace) …
      await fs.mkdir(path.join(t.dir, '.keel/state/running'), { recursive: true });
      await fs.writeFile(path.join(t.dir, '.keel/state/running/forged.json'), JSON.stringify(forged));
      // … and where records live now, even with a guessed token.
      const dir = runningDir(t.ctx().ws);
      await fs.mkdir(dir, { recursive: true, mode: 0o700 });
      await fs.writeFile(path.join(dir, 'forged.json'), JSON.stringify({ ...forged, token: 'guessed' }));
      expect((await run({ command: 'true' }, unsandboxed())).is_error).toBe(false);
      expect(isAlive(pid)).toBe(true);
    } finally {
      victim.kill('SIGKILL');
    }
  });
});
