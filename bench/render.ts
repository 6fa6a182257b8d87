// The report and charts of a bench run from its JSON: `npx tsx bench/render.ts bench/results/NAME.json`.
// `npm run bench` writes NAME.md and its charts only when its scenarios end; a run that failed
// or was stopped halfway has only NAME.json (`partial: true`, written after every phase). This
// writes NAME.md and NAME-<scenario>.svg beside it from the phases it kept, as the run would
// have, with the reports of the harnesses it ran (NAME-<harness>.md); and it redraws a whole
// run's report after a change to the report's layout.
import fs from 'node:fs/promises';
import path from 'node:path';
import { type HarnessResult, type harnessSummary, withHarnesses } from './suite/harnesses';
import type { Phase } from './suite/measure';
import { charts, markdown, summarise } from './suite/report';

type Kept = { partial?: boolean; meta: Record<string, string>; notes: string[]; phases: Phase[]; harnesses?: Array<ReturnType<typeof harnessSummary>> };

const file = process.argv[2];
if (!file?.endsWith('.json')) throw new Error('usage: npx tsx bench/render.ts bench/results/NAME.json');
const run = JSON.parse(await fs.readFile(file, 'utf8')) as Kept;
const name = path.basename(file, '.json');
const dir = path.dirname(file);
const summary = summarise(run.phases);
const notes = run.partial ? [...run.notes, `the run stopped before it ended: this report holds the ${run.phases.length} phases it measured (bench/render.ts)`] : run.notes;
const harnesses = await Promise.all(
  (run.harnesses ?? []).map(async (h): Promise<HarnessResult> => {
    if (!h.ok) return h;
    const own = await fs.readFile(path.join(dir, `${h.file}.md`), 'utf8').catch(() => undefined);
    return own === undefined ? { ...h, ok: false, failure: `its report ${h.file}.md is not beside ${name}.json` } : { ...h, ok: true, markdown: own };
  }),
);
const suite = markdown(`Benchmark: ${name}`, run.meta, summary, notes);
await fs.writeFile(path.join(dir, `${name}.md`), withHarnesses(suite, harnesses));
const drawn = charts(summary);
for (const [scenario, svg] of drawn) await fs.writeFile(path.join(dir, `${name}-${scenario}.svg`), svg);
console.log(`wrote ${path.join(dir, `${name}.md`)} and ${drawn.length} chart(s)`);
