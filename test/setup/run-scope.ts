// Global setup of every project: whatever this test run started is stopped when the run
// ends, even when the run itself is killed (a CI time limit, Ctrl-C twice, SIGKILL). Every
// process of the run carries KEEL_TEST_RUN (set in vitest.config.ts, before any fork or
// server starts); a watchdog outside the run (test/setup/run-watchdog.sh) waits for vitest
// to exit, however it exits, then stops every process still carrying the marker. The normal
// end sweeps too, after the other global teardowns.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sweepMarked } from './processes';
import { sharedOnce } from './shared-setup';

const here = path.dirname(fileURLToPath(import.meta.url));

export default async function setup() {
  const run = process.env.KEEL_TEST_RUN;
  if (run === undefined) return;
  const { value: watchdog, teardown } = await sharedOnce('run watchdog', async () => {
    // Outside the run: no marker in its environment, its own session, not waited for.
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'KEEL_TEST_RUN' && name !== 'KEEL_TEST_FILE'));
    const child = spawn('bash', [path.join(here, 'run-watchdog.sh'), String(process.pid), run], { detached: true, stdio: 'ignore', env });
    child.once('error', () => {}); // no bash: the normal end still sweeps
    child.unref();
    return {
      value: child,
      async stop() {
        const left = await sweepMarked('KEEL_TEST_RUN', run);
        for (const { pid, command } of left) console.warn(`[keel test] stopped pid ${pid} left running by the run: ${command.slice(0, 200)}`);
        child.kill('SIGTERM');
      },
    };
  });
  void watchdog;
  return teardown;
}
