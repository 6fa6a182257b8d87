// Stopping a racing loop of the escape suite: its whole process group, and only once it is
// gone, so that nothing it was doing lands after the caller looks at the directory.
import type { ChildProcess } from 'node:child_process';

export async function killGroup(child: ChildProcess): Promise<void> {
  // A kill returns before the last operation in flight is done: wait for the exit.
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    process.kill(-(child.pid ?? 0), 'SIGKILL');
  } catch {
    // gone
  }
  if (child.exitCode === null && child.signalCode === null) await exited;
}
