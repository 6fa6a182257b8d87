// Long text at a terminal goes through a pager ($KEEL_PAGER, else $PAGER, else `less`), so
// that a call longer than the screen is read from its top before the question under it, not
// scrolled past. Not a terminal (a pipe, a log, a test): printed whole.
import { spawn } from 'node:child_process';
import type { Interface } from 'node:readline';
import type { Output } from './output';

export async function showPaged(lines: string[], out: Output, input?: Interface): Promise<void> {
  const rows = process.stdout.rows || 24;
  const columns = process.stdout.columns || 80;
  // Screen rows the text takes once long lines wrap.
  const needed = lines.reduce((n, l) => n + Math.max(1, Math.ceil(l.length / columns)), 0);
  if (!out.tty || !process.stdin.isTTY || needed <= rows - 3) {
    for (const l of lines) out.line(l);
    return;
  }
  const pager = process.env.KEEL_PAGER || process.env.PAGER || 'less';
  // The pager reads keys from the terminal: our own reading of stdin stops meanwhile.
  input?.pause();
  try {
    const shown = await new Promise<boolean>((resolve) => {
      const child = spawn(pager, { shell: true, stdio: ['pipe', 'inherit', 'inherit'] });
      child.on('error', () => resolve(false));
      child.on('close', (code) => resolve(code === 0));
      child.stdin.on('error', () => undefined); // the person quit the pager before the end
      child.stdin.end(`${lines.join('\n')}\n`);
    });
    if (!shown) for (const l of lines) out.line(l);
    else out.line(lines[0] ?? ''); // the header stays on screen above the question
  } finally {
    input?.resume();
  }
}
