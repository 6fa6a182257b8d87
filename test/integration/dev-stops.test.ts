// `npm run dev` stops the worker, the console and the Temporal server (a detached child)
// before it returns, whichever signal it gets, and exits 128 + the signal's number. Run as
// people and CI run it: through npm, the signal sent to npm. The run's marker in the
// environment finds every process it started, afterwards.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import net from 'node:net';
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

/** A port P with P + 1 free too: Keel's /metrics and the Temporal runtime's, on the next port. */
async function freePortPair(): Promise<number> {
  const listen = (port: number) =>
    new Promise<net.Server | null>((resolve) => {
      const server = net.createServer();
      server.once('error', () => resolve(null));
      server.listen(port, '127.0.0.1', () => resolve(server));
    });
  for (;;) {
    const first = await listen(0);
    if (!first) continue;
    const port = (first.address() as net.AddressInfo).port;
    const second = await listen(port + 1);
    await new Promise((resolve) => first.close(resolve));
    if (second) {
      await new Promise((resolve) => second.close(resolve));
      return port;
    }
  }
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
      // SIGTERM's run also has the metrics on, as docs/telemetry.md's command does: dev installs
      // the Temporal runtime once (it exited 1, "Runtime singleton has already been installed").
      const metricsPort = signal === 'SIGTERM' ? await freePortPair() : null;
      const metricsEnv = metricsPort === null ? {} : { OTEL_METRICS_EXPORTER: 'prometheus', OTEL_EXPORTER_PROMETHEUS_HOST: '127.0.0.1', OTEL_EXPORTER_PROMETHEUS_PORT: String(metricsPort) };
      const env = { ...(await devEnv(marker, data)), ...metricsEnv };
      const child = killWhenTestEnds(spawn('npm', ['run', '--silent', 'dev'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] }));
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
      try {
        await waitForOutput(/Ctrl-C stops the worker, the console and the server\./, { child, text: () => out, ended: exited, timeoutMs: 150_000, what: 'npm run dev did not start' });
        expect(out).toMatch(/workspace:\s+workspace \(the console's default\)/);
        if (metricsPort !== null) {
          expect(out).toContain(`metrics on http://127.0.0.1:${metricsPort}/metrics (Keel) and http://127.0.0.1:${metricsPort + 1}/metrics (Temporal runtime)`);
          for (const port of [metricsPort, metricsPort + 1]) expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(200);
        }
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
