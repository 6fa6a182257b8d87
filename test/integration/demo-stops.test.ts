// `npm run demo` where it cannot finish, and when it is told to stop: it never hangs and
// never leaves a process behind (its Temporal dev server is a detached child). Each run
// carries a marker in its environment, which every process it starts inherits; after the
// run no process on the machine may still carry it.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { waitForOutput } from '../fixtures/process-output';
import { keelWorkflowBundleFile } from '../helpers/temporal';
import { killWhenTestEnds } from '../fixtures/child-teardown';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const realBwrap = '/usr/bin/bwrap';
let shims: string;
/** The run's workflow bundle (test/setup/workflow-bundle.ts), once built. */
let bundleFile: string;

interface DemoRun {
  child: ChildProcess;
  marker: string;
  stdout(): string;
  /** Resolves with the exit code (or the signal's 128 + n) and how long the run took. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }>;
}

function startDemo(bwrapDir: string | null): DemoRun {
  const marker = `keel-demo-test-${randomUUID()}`;
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', KEEL_DEMO_TEST_MARKER: marker };
  for (const k of ['ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL', 'TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE', 'KEEL_TASK_QUEUE']) delete env[k];
  if (bwrapDir) env.PATH = `${bwrapDir}:${env.PATH ?? ''}`;
  // The run's workflow bundle (test/setup/workflow-bundle.ts), as `npm run build` would give
  // it: the worker skips webpack (5–20 s of CPU a start). demo.test.ts's first run bundles from source.
  env.KEEL_WORKFLOW_BUNDLE = bundleFile;
  const began = Date.now();
  // As a user (and CI, and `timeout`) runs it: through npm, signals sent to npm.
  const child = killWhenTestEnds(spawn('npm', ['run', '--silent', 'demo'], { cwd: root, env, stdio: ['pipe', 'pipe', 'pipe'] }));
  // npm's children too (the worker, the stand-in, a dev server), should the test end first: they carry the marker.
  onTestFinished(async () => {
    for (const line of await processesWith(marker)) {
      try {
        process.kill(Number(line.split(':')[0]), 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
  });
  child.stdin.end();
  let stdout = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stdout += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }>((resolve) => child.once('close', (code, signal) => resolve({ code, signal, ms: Date.now() - began })));
  return { child, marker, stdout: () => stdout, exited };
}

/** Resolves when the demo's output matches (as it comes); fails on its exit or after `ms`. */
function demoOutput(run: DemoRun, pattern: RegExp, ms: number): Promise<RegExpMatchArray> {
  return waitForOutput(pattern, { child: run.child, text: () => run.stdout(), ended: run.exited, timeoutMs: ms, what: `no ${pattern} in ${ms} ms` });
}

/** Processes whose environment carries the run's marker (root reads every /proc/<pid>/environ). */
async function processesWith(marker: string): Promise<string[]> {
  const found: string[] = [];
  for (const pid of await fs.readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const environ = await fs.readFile(`/proc/${pid}/environ`, 'latin1').catch(() => '');
    if (!environ.includes(marker)) continue;
    const cmdline = await fs.readFile(`/proc/${pid}/cmdline`, 'latin1').catch(() => '');
    found.push(`${pid}: ${cmdline.replace(/\0/g, ' ').trim()}`);
  }
  return found;
}

/**
 * Left-over processes get a moment to finish exiting (a zombie being reaped): up to 30 s, as
 * a busy machine may take seconds to reap one (2 s was the bound). One really left behind
 * stays for good, so the bound decides only how long a failure takes to show.
 */
async function expectNoneLeft(marker: string): Promise<void> {
  let left: string[] = [];
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
    left = await processesWith(marker);
    if (left.length === 0) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  for (const line of left) process.kill(Number(line.split(':')[0]), 'SIGKILL');
  expect(left).toEqual([]);
}


/** The demo's workspace, which it keeps for people to look at: the test removes it. */
async function removeWorkspace(stdout: string) {
  const workspace = /goal goal-\S+ in (\S+)/.exec(stdout)?.[1];
  if (workspace) await fs.rm(workspace, { recursive: true, force: true });
}

beforeAll(async () => {
  bundleFile = await keelWorkflowBundleFile();
  shims = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-bwrap-shims-'));
  // No bubblewrap that works: user namespaces forbidden, as under Docker's default seccomp profile.
  await fs.mkdir(path.join(shims, 'broken'));
  await fs.writeFile(path.join(shims, 'broken', 'bwrap'), '#!/bin/sh\necho "bwrap: No permissions to create new namespace" >&2\nexit 1\n', { mode: 0o755 });
  // A sandbox that starts for the worker's probe (activities/tools/sandbox.ts runProbe, in a keel-sandbox-probe-* directory) but fails every command: the tests task fails, the goal blocks.
  await fs.mkdir(path.join(shims, 'failing'));
  await fs.writeFile(
    path.join(shims, 'failing', 'bwrap'),
    `#!/bin/sh\ncase "$*" in *keel-sandbox-probe-*) exec ${realBwrap} "$@" ;; esac\necho "bwrap: Creating new namespace failed" >&2\nexit 1\n`,
    { mode: 0o755 },
  );
});

afterAll(async () => {
  await fs.rm(shims, { recursive: true, force: true });
});

describe('npm run demo never hangs', () => {
  it('without a working sandbox: one line saying so, a non-zero exit before starting anything, nothing left behind', async () => {
    const run = startDemo(path.join(shims, 'broken'));
    const { code, ms } = await run.exited;
    const out = run.stdout();
    expect(code, out).toBe(1);
    // Before starting anything: seconds idle; the bound is for a busy machine's npm and tsx.
    expect(ms).toBeLessThan(120_000);
    expect(out).toMatch(/^keel demo: cannot run: run_command's sandbox is unavailable here \(bubblewrap did not start the sandbox: bwrap: No permissions to create new namespace.*nothing was started\.$/m);
    expect(out).not.toMatch(/Temporal dev server|Keel worker|goal goal-/);
    await expectNoneLeft(run.marker);
  }, 180_000);

  it('a goal it cannot finish (blocked on a failed task) is cancelled: exit 3 with the reason, nothing left behind', async () => {
    const run = startDemo(path.join(shims, 'failing'));
    const { code, ms } = await run.exited;
    const out = run.stdout();
    await removeWorkspace(out);
    expect(code, out).toBe(3);
    expect(out).toMatch(/blocked on tests: node --test slugify\.test\.mjs did not pass\.; nobody here can resolve a failed task, so the goal is cancelled/);
    expect(out).toMatch(/report: stopped/);
    expect(out).toMatch(/keel demo: the goal was not met: .*blocked on tests/);
    await expectNoneLeft(run.marker);
    console.log(`demo blocked → exit 3 in ${ms} ms`);
  }, 180_000);

  for (const [signal, code] of [['SIGTERM', 143], ['SIGINT', 130]] as const) {
    it(`${signal} while the goal runs stops everything it started (worker, stand-in, Temporal dev server)`, async () => {
      const run = startDemo(null);
      await demoOutput(run, /keel demo: goal goal-\S+ in /, 150_000);
      const sentAt = Date.now();
      run.child.kill(signal);
      const exited = await run.exited;
      const out = run.stdout();
      await removeWorkspace(out);
      expect(exited.code, out).toBe(code);
      expect(out).toMatch(new RegExp(`keel demo: ${signal}; stopping what it started`));
      // Seconds idle; a busy machine's worker drains slower, and a hang is forever.
      expect(Date.now() - sentAt).toBeLessThan(90_000);
      await expectNoneLeft(run.marker);
    }, 300_000);
  }
});
