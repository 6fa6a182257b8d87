// A worker that was killed but not yet waited for by its parent is a zombie: its /proc entry
// (start time included) is still there, and it must not count as alive, or the commands it
// left running are never reaped.
import { spawn } from 'node:child_process';
import { expect, it } from 'vitest';
import { isZombie, processStartTicks } from '../../../activities/tools/orphans';
import { killWhenTestEnds } from '../../fixtures/child-teardown';

it('a process that exited but was not waited for is a zombie; a running one is not', async () => {
  // perl forks a child that exits at once and never waits for it. (A shell that execs `sleep`
  // was not enough: bash reaps a child that exits before the exec, and under CI's load it did.)
  // perl-base is Essential in Debian.
  const parent = killWhenTestEnds(spawn('perl', ['-e', '$| = 1; my $pid = fork(); exit 0 if $pid == 0; print "$pid\n"; sleep 20;'], { stdio: ['ignore', 'pipe', 'ignore'] }));
  try {
    const pid = Number(await new Promise<string>((resolve) => parent.stdout.once('data', (d: Buffer) => resolve(d.toString().trim()))));
    await expect.poll(() => isZombie(pid), { timeout: 15_000 }).toBe(true);
    expect(processStartTicks(pid)).toBeDefined();
    expect(isZombie(parent.pid!)).toBe(false);
    expect(isZombie(process.pid)).toBe(false);
  } finally {
    parent.kill('SIGKILL');
  }
});
