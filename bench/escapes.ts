// `npm run escapes`: the escape suite at full size (1,000 symlink swaps and every other
// route), as the user running it AND, when that is root, again as an unprivileged user
// (nobody, through setpriv): a worker may run as either, and the sandbox must hold for
// both. Writes bench/results/escapes.json and .md and exits non-zero on any escape.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { reportMarkdown, runEscapes, type EscapeReport } from '../test/escapes/suite';
import { runBareControlProbes } from '../test/escapes/bare-controls';
import { runTrustProbes } from '../test/escapes/trust';

const here = path.dirname(fileURLToPath(import.meta.url));
const swaps = Number(process.argv.find((arg) => /^\d+$/.test(arg)) ?? 1000);
// --control: the same attempts with the sandbox off, to show the suite sees escapes.
const control = process.argv.includes('--control');
// --json: print the report as JSON only (how the unprivileged run hands it back).
const json = process.argv.includes('--json');
const report = await runEscapes({ swaps, sandboxOff: control });
// [2/9]'s trust probes (test/escapes/trust.ts): nested policy files, .git and files that run
// later, symlinked workspaces, forged approvers, plaintext and bare signals; and every control
// tried live by a Temporal client without the keys (test/escapes/bare-controls.ts).
if (!control) {
  const trust = [...(await runTrustProbes()), await runBareControlProbes()];
  report.routes.push(...trust);
  report.totalAttempts += trust.reduce((n, r) => n + r.attempts, 0);
  report.totalEscapes += trust.reduce((n, r) => n + r.escapes, 0);
}
if (json) {
  process.stdout.write(`${JSON.stringify(report)}\n`);
  process.exit(0);
}
if (control) {
  console.log(reportMarkdown(report));
  process.exit(0);
}
const reports: EscapeReport[] = [report];
if (process.getuid?.() === 0) {
  const run = spawnSync(
    'setpriv',
    ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, '--import', 'tsx', path.join(here, 'escapes.ts'), String(swaps), '--json'],
    { cwd: path.join(here, '..'), encoding: 'utf8', env: { ...process.env, HOME: '/tmp' }, maxBuffer: 64 * 1024 * 1024 },
  );
  const line = run.stdout.trim().split('\n').pop() ?? '';
  try {
    reports.push(JSON.parse(line) as EscapeReport);
  } catch {
    console.error(`the unprivileged run failed (exit ${run.status}):\n${run.stderr.slice(-4000)}`);
    process.exit(1);
  }
}
await fs.mkdir(path.join(here, 'results'), { recursive: true });
await fs.writeFile(path.join(here, 'results/escapes.json'), `${JSON.stringify(reports, null, 2)}\n`);
const markdown = reports.map(reportMarkdown).join('\n');
await fs.writeFile(path.join(here, 'results/escapes.md'), markdown);
console.log(markdown);
process.exit(reports.every((r) => r.totalEscapes === 0) ? 0 : 1);
