// `npm run escapes`: the escape suite at full size (1,000 symlink swaps and every other
// route); writes bench/results/escapes.json and .md and exits non-zero on any escape.
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { reportMarkdown, runEscapes } from '../test/escapes/suite';

const here = path.dirname(fileURLToPath(import.meta.url));
const swaps = Number(process.argv.find((arg) => /^\d+$/.test(arg)) ?? 1000);
// --control: the same attempts with the sandbox off, to show the suite sees escapes.
const control = process.argv.includes('--control');
const report = await runEscapes({ swaps, sandboxOff: control });
if (control) {
  console.log(reportMarkdown(report));
  process.exit(0);
}
await fs.mkdir(path.join(here, 'results'), { recursive: true });
await fs.writeFile(path.join(here, 'results/escapes.json'), `${JSON.stringify(report, null, 2)}\n`);
const markdown = reportMarkdown(report);
await fs.writeFile(path.join(here, 'results/escapes.md'), markdown);
console.log(markdown);
process.exit(report.totalEscapes === 0 ? 0 : 1);
