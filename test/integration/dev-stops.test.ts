// `npm run dev` stops the worker, the console and the Temporal server (a detached child)
// before it returns, whichever signal it gets, and exits 128 + the signal's number. Run as
// people and CI run it: through npm, the signal sent to npm. The run's marker in the
// environment finds every process it started, afterwards.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { waitForOutput } from '../fixtures/process-output';
import { keelWorkflowBundleFile } from '../helpers/temporal';
import { killWhenTestEnds } from '../fixtures/child-teardown';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

async function processesWith(marker: string): Promise<string[]> {
  const found: string[] = [];
  for (const pid of await fs.readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const environ = await fs.readFile(`/proc/${pid}/environ`, 'latin1').catch(() => '');
    if (environ.includes(marker)) found.push(`${pid}: ${(await fs.readFile(`/proc/${pid}/cmdline`, 'latin1').catch(() => '')).replace(/\0/g, ' ').trim()}`);
  }
  return found;
}

async function devEnv(marker: string, data: string): Promise<NodeJS.ProcessEnv> {
  return {
    ...process.env,
    KEEL_DEV_TEST_MARKER: marker,
    KEEL_DEV_DATA: data,
    // 0: the dev server's ports are picked (and picked again if another process takes one first).
    KEEL_DEV_PORT: '0',
    KEEL_DEV_UI_PORT: '0',
    KEEL_SERVE_PORT: '0',
    KEEL_TASK_QUEUE: `dev-test-${randomUUID()}`,
    // The run's workflow bundle (test/setup/workflow-bundle.ts), as `npm run build` gives it:
    // the dev worker skips webpack (5–20 s of CPU a start). The worker bundling from source is
    // covered by demo.test.ts's first run.
    KEEL_WORKFLOW_BUNDLE: await keelWorkflowBundleFile(),
  };
}

describe('npm run dev', () => {
  // The API refuses its settings after the worker exists: that worker held the connection,
  // and dev crashed with IllegalStateError instead of stopping what it had started.
  it('a setting the API refuses: one line naming it, exit 1, nothing left running', async () => {
    const marker = `keel-dev-test-${randomUUID()}`;
    const data = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-dev-test-'));
    try {
      const child = killWhenTestEnds(spawn('npm', ['run', '--silent', 'dev'], { cwd: root, env: { ...(await devEnv(marker, data)), KEEL_API_TOKEN: 'short' }, stdio: ['ignore', 'pipe', 'pipe'] }));
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      expect(await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c))), out).toBe(1);
      expect(out).toMatch(/keel dev: KEEL_API_TOKEN must be at least 16 characters/);
      expect(out).not.toMatch(/IllegalStateError/);
      expect(out).toMatch(/keel dev: stopped\./);
      expect(await processesWith(marker)).toEqual([]);
    } finally {
      for (const line of await processesWith(marker)) process.kill(Number(line.split(':')[0]), 'SIGKILL');
      await fs.rm(data, { recursive: true, force: true });
    }
  }, 240_000);

  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
    it(`${signal}: worker, console and server stopped before it returns ${code}`, async () => {
      const marker = `keel-dev-test-${randomUUID()}`;
      const data = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-dev-test-'));
      const env = await devEnv(marker, data);
      const child = killWhenTestEnds(spawn('npm', ['run', '--silent', 'dev'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] }));
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
      try {
        await waitForOutput(/Ctrl-C stops the worker, the console and the server\./, { child, text: () => out, ended: exited, timeoutMs: 150_000, what: 'npm run dev did not start' });
        expect(out).toMatch(/workspace:\s+workspace \(the console's default\)/);
        child.kill(signal);
        expect(await exited, out).toBe(code);
        // Stopped in order, the server last, before the process returned.
        expect(out).toMatch(new RegExp(`keel dev: ${signal}; stopping the worker, the console and the server\\.\\.\\.[\\s\\S]*keel dev: stopping the Temporal server\\.\\.\\.[\\s\\S]*keel dev: stopped\\.`));
        expect(await processesWith(marker)).toEqual([]);
      } finally {
        for (const line of await processesWith(marker)) process.kill(Number(line.split(':')[0]), 'SIGKILL');
        await fs.rm(data, { recursive: true, force: true });
      }
    }, 240_000);
  }
});
