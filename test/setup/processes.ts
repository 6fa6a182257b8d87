// Processes a test run (or one test file) started, found by a marker in their environment:
// every child inherits its parent's environment, so the marker follows a process wherever it
// goes — into its own process group (the dev server), through `runuser` (PostgreSQL), or to
// init when its parent died first. That is how a stand-in, worker or server a test left
// behind (a hook that timed out before it held the handle) is found and stopped, instead of
// living on for half an hour after the run. Linux only (/proc); elsewhere nothing is found.
import { readFileSync, readdirSync } from 'node:fs';

export interface Found {
  pid: number;
  command: string;
}

/** Every process whose environment holds `name=value`, except `exclude` (readable ones only: ours, or all as root). */
export function processesMarked(name: string, value: string, exclude: readonly number[] = []): Found[] {
  const wanted = Buffer.from(`${name}=${value}\0`);
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const found: Found[] = [];
  for (const entry of entries) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid || exclude.includes(pid)) continue;
    try {
      // The environment is NUL-separated and starts with a variable: match at 0 or after a NUL.
      const environ = readFileSync(`/proc/${pid}/environ`);
      const at = environ.indexOf(wanted);
      if (at < 0 || (at > 0 && environ[at - 1] !== 0)) continue;
      const command = readFileSync(`/proc/${pid}/cmdline`).toString('utf8').split('\0').filter(Boolean).join(' ');
      found.push({ pid, command });
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return found;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    // A zombie still answers: it has exited and only waits for its parent to reap it.
    return !/^\d+ \(.*\) Z/s.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/**
 * Stops every process marked `name=value`: SIGTERM, then SIGKILL for what is still there
 * after `graceMs`. Returns what it found. Waits by polling the processes themselves, not a
 * fixed sleep: a sweep of processes that stop at once returns at once.
 */
export async function sweepMarked(name: string, value: string, options: { exclude?: readonly number[]; graceMs?: number; settleMs?: number } = {}): Promise<Found[]> {
  // A process its test has just signalled is still there for a moment: give what is already
  // on its way out `settleMs` to go, and report only what had to be stopped.
  const settle = Date.now() + (options.settleMs ?? 1_000);
  let found = processesMarked(name, value, options.exclude);
  while (found.length > 0 && Date.now() < settle) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    found = found.filter(({ pid }) => alive(pid));
  }
  if (found.length === 0) return found;
  const signal = (pid: number, sig: NodeJS.Signals) => {
    try {
      process.kill(pid, sig);
    } catch {
      // Already gone.
    }
  };
  for (const { pid } of found) signal(pid, 'SIGTERM');
  const deadline = Date.now() + (options.graceMs ?? 5_000);
  while (found.some(({ pid }) => alive(pid)) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  for (const { pid } of found) if (alive(pid)) signal(pid, 'SIGKILL');
  return found;
}
