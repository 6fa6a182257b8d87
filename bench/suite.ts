// `npm run bench -- [--scenario single,concurrent,parked,long,stream,first-delta,responsive,cost,sub-agents,fork] [--rounds 3] [--parked-rounds 1] [--warmup 1] [--quick]
// [--variants floor,floor-local,keel,keel-pg,ai-sdk,ai-sdk-stream,openai-agents] [--name NAME] [--parked N]
// [--sessions K] [--turns T] [--long-turns N] [--long-output-bytes B: each long turn reads a file of B bytes]`
//
// Keel against the floor (a bare Temporal workflow doing the same activities) and the
// peers (bench/peers; `npm run bench:peers:install` first), on one Temporal dev server
// with one stand-in model, each variant in its own worker process (bench/suite/run.ts).
// Rounds interleave the variants; ratios are taken to the floor inside each round, since
// the machine is shared and only ratios survive its load. `--warmup` rounds of single,
// concurrent, stream and first-delta run first and are not counted (each worker's JIT warms up). Writes
// bench/results/<name>.{json,md} and <name>-<scenario>.svg. `sub-agents` and `fork` compare Keel
// with Keel doing the same work another way, each with a harness of its own, run after the
// others (bench/suite/harnesses.ts): <name>-<scenario>.{json,md}, their reports also in <name>.md.
import fs from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { HARNESS_NAMES, harnessSummary, runHarness, type HarnessName, type HarnessResult, withHarnesses } from './suite/harnesses';
import { charts, markdown, summarise } from './suite/report';
import type { Phase } from './suite/measure';
import { runBench } from './suite/run';
import { FULL, QUICK, SCENARIOS, type ScenarioName } from './suite/scenarios';
import { root, VARIANTS } from './suite/variants';

const { values } = parseArgs({
  options: {
    scenario: { type: 'string', default: [...SCENARIOS, ...HARNESS_NAMES].join(',') },
    variants: { type: 'string', default: VARIANTS.join(',') },
    rounds: { type: 'string', default: '3' },
    // A round of 10,000 parked sessions is ~25 min per variant on 2 cores: one, unless asked.
    'parked-rounds': { type: 'string', default: '1' },
    warmup: { type: 'string', default: '1' },
    quick: { type: 'boolean', default: false },
    name: { type: 'string' },
    parked: { type: 'string' },
    sessions: { type: 'string' },
    turns: { type: 'string' },
    'long-turns': { type: 'string' },
    'long-output-bytes': { type: 'string' },
    out: { type: 'string', default: path.join(root, 'bench/results') },
  },
});

const pick = <T extends string>(list: string, all: readonly T[], what: string): T[] =>
  list.split(',').map((x) => {
    if (!(all as readonly string[]).includes(x)) throw new Error(`unknown ${what} ${x}; one of ${all.join(', ')}`);
    return x as T;
  });
const chosen = pick(values.scenario, [...SCENARIOS, ...HARNESS_NAMES], 'scenario');
const scenarios = chosen.filter((x): x is ScenarioName => (SCENARIOS as readonly string[]).includes(x));
const harnesses = chosen.filter((x): x is HarnessName => (HARNESS_NAMES as readonly string[]).includes(x));
const variants = pick(values.variants, VARIANTS, 'variant');
const rounds = Number(values.rounds);
const parkedRounds = Number(values['parked-rounds']);
const warmupRounds = Number(values.warmup);
if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds ${values.rounds}: a whole number of rounds, at least 1`);
if (!Number.isInteger(parkedRounds) || parkedRounds < 1) throw new Error(`--parked-rounds ${values['parked-rounds']}: a whole number of rounds, at least 1`);
if (!Number.isInteger(warmupRounds) || warmupRounds < 0) throw new Error(`--warmup ${values.warmup}: a whole number of rounds, 0 or more`);
const sizes = { ...(values.quick ? QUICK : FULL) };
if (values.parked) sizes.parked = Number(values.parked);
if (values.sessions) sizes.sessions = Number(values.sessions);
if (values.turns) sizes.turns = Number(values.turns);
if (values['long-turns']) sizes.longTurns = Number(values['long-turns']);
if (values['long-output-bytes']) sizes.longOutputBytes = Number(values['long-output-bytes']);
const name = values.name ?? (values.quick ? 'bench-quick' : 'bench');

await fs.mkdir(values.out, { recursive: true });
const command = `\`npm run bench -- ${process.argv.slice(2).join(' ')}\``;
// Written after every phase (`partial: true`), then replaced by the whole run's file: a run
// that fails or is stopped halfway keeps what it measured (`npx tsx bench/pool.ts` reads it;
// `npx tsx bench/render.ts` writes its report and charts).
const writePartial = async (phases: readonly Phase[], notes: readonly string[]) => {
  const partial = { partial: true, meta: { run: command, when: new Date().toISOString() }, sizes, notes, summary: summarise(phases), phases };
  const file = path.join(values.out, `${name}.json`);
  await fs.writeFile(`${file}.tmp`, `${JSON.stringify(partial, null, 2)}\n`);
  await fs.rename(`${file}.tmp`, file);
};
const log = (line: string) => process.stdout.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);
const run = scenarios.length > 0 ? await runBench({ scenarios, variants, rounds, scenarioRounds: { parked: parkedRounds }, warmupRounds, sizes, onPhase: writePartial, log }) : null;
const meta: Record<string, string> = { run: command, ...(run?.meta ?? { started: new Date().toISOString() }) };
const suiteMarkdown = run ? markdown(`Benchmark: ${name}`, meta, run.summary, run.notes) : `# Benchmark: ${name}\n\n${command}, started ${meta.started}\n`;
for (const [scenario, svg] of run ? charts(run.summary) : []) await fs.writeFile(path.join(values.out, `${name}-${scenario}.svg`), svg);
// The run's files are written again after each harness: one that fails or is stopped keeps the others'.
const harnessResults: HarnessResult[] = [];
const write = async () => {
  const json = { ...(run ?? { sizes, notes: [], summary: {}, phases: [] }), meta, harnesses: harnessResults.map(harnessSummary) };
  await fs.writeFile(path.join(values.out, `${name}.json`), `${JSON.stringify(json, null, 2)}\n`);
  const md = withHarnesses(suiteMarkdown, harnessResults);
  await fs.writeFile(path.join(values.out, `${name}.md`), md);
  return md;
};
let md = await write();
for (const harness of harnesses) {
  log(`scenario ${harness}: its own harness (bench/suite/harnesses.ts)`);
  const result = await runHarness(harness, { quick: values.quick, dir: values.out, runName: name });
  harnessResults.push(result);
  if (!result.ok) process.exitCode = 1;
  md = await write();
}
console.log(md);
