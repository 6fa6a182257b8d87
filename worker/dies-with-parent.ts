// A child process that must not outlive us (the Temporal dev server of `npm run dev`, the
// demo and the tests): Linux's parent-death signal, set by util-linux's `setpriv
// --pdeathsig` just before it execs the program, reaches the child whenever our process
// ends — a crash, SIGKILL or a CI time limit included, which no exit hook sees. The program
// keeps its own pid (setpriv execs it), so signals and exit codes are the program's own.
// Without setpriv (not Linux, or util-linux missing) the program runs as it is and only our
// exit hooks stop it.
import { accessSync, constants } from 'node:fs';

const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((candidate) => {
  try {
    accessSync(candidate, constants.X_OK);
    return true;
  } catch {
    return false;
  }
});

/** The command and arguments that run `program args` with SIGTERM as its parent-death signal. */
export function diesWithParent(program: string, args: readonly string[]): [string, string[]] {
  return SETPRIV === undefined ? [program, [...args]] : [SETPRIV, ['--pdeathsig', 'TERM', '--', program, ...args]];
}
