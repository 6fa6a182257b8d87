// A worker that was killed but not yet waited for by its parent is a zombie: its /proc entry
// (start time included) is still there, and it must not count as alive, or the commands it
// left running are never reaped.
import { spawn } from 'node:child_process';
import { expect, it } from 'vitest';
import { isZombie, processStartTicks } from '../../../activities/tools/orphans';

it('a process that exited but was not waited for is a zombie; a running one is not', async () => {
  // `true` exits at once; its parent becomes `sleep`, which never waits for it.
  const parent = spawn('/bin/sh', ['-c', 'true & echo $!; exec sleep 20'], { stdio: ['ignore', 'pipe', 'ignore'] });
  try {
    const pid = Number(await new Promise<string>((resolve) => parent.stdout.once('data', (d: Buffer) => resolve(d.toString().trim()))));
    await expect.poll(() => isZombie(pid), { timeout: 5_000 }).toBe(true);
    expect(processStartTicks(pid)).toBeDefined();
    expect(isZombie(parent.pid!)).toBe(false);
    expect(isZombie(process.pid)).toBe(false);
  } finally {
    parent.kill('SIGKILL');
  }
});
