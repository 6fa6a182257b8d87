// `npm run bench -- [--scenario single,concurrent,parked,long,stream] [--rounds 3] [--quick]
// [--variants floor,keel,ai-sdk,ai-sdk-stream,openai-agents] [--name NAME] [--parked N]`
//
// Keel against the floor (a bare Temporal workflow doing the same activities) and the
// peers, on one Temporal dev server (SQLite file) with one stand-in model, each variant in
// its own worker process. Rounds interleave the variants (the order rotates each round);
// ratios are taken to the floor inside each round, since the machine is shared and only
// ratios survive its load. Writes bench/results/<name>.{json,md} and <name>-<scenario>.svg.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { startStandin } from '../standin/server';
import { startDevServer } from '../worker/dev-server';
import { type Phase } from './suite/measure';
import { loadAverage } from './suite/proc';
import { markdown, summarise, svgChart } from './suite/report';
import { FULL, QUICK, runScenario, SCENARIO_VARIANTS, SCENARIOS, type Context } from './suite/scenarios';
import { benchScenario, writeStepFiles } from './suite/script';
import { LABELS, root, unavailable, VariantWorker, VARIANTS, type VariantName } from './suite/variants';

const { values } = parseArgs({
  options: {
    scenario: { type: 'string', default: SCENARIOS.join(',') },
    variants: { type: 'string', default: VARIANTS.join(',') },
    rounds: { type: 'string', default: '3' },
    quick: { type: 'boolean', default: false },
    name: { type: 'string' },
    parked: { type: 'string' },
    sessions: { type: 'string' },
    'long-turns': { type: 'string' },
    out: { type: 'string', default: path.join(root, 'bench/results') },
  },
});

const pick = <T extends string>(list: string, all: readonly T[], what: string): T[] =>
  list.split(',').map((x) => {
    if (!(all as readonly string[]).includes(x)) throw new Error(`unknown ${what} ${x}; one of ${all.join(', ')}`);
    return x as T;
  });
const scenarios = pick(values.scenario, SCENARIOS, 'scenario');
const wanted = pick(values.variants, VARIANTS, 'variant');
if (!wanted.includes('floor')) wanted.unshift('floor');
const rounds = Number(values.rounds);
const sizes = { ...(values.quick ? QUICK : FULL) };
if (values.parked) sizes.parked = Number(values.parked);
if (values.sessions) sizes.sessions = Number(values.sessions);
if (values['long-turns']) sizes.longTurns = Number(values['long-turns']);
const name = values.name ?? (values.quick ? 'bench-quick' : 'bench');

const notes: string[] = [];
const variants: VariantName[] = wanted.filter((v) => {
  const why = unavailable(v);
  if (why) notes.push(`${LABELS[v]} did not run: ${why}`);
  return !why;
});

const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-bench-'));
const workspace = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-bench-ws-')));
await writeStepFiles(workspace, [1, sizes.singleSteps, sizes.steps]);
const server = await startDevServer({ port: 0, dbFile: path.join(dir, 'temporal.db'), readyTimeoutMs: 180_000 });
const standin = await startStandin({ scenario: benchScenario([1]) });
const connection = await Connection.connect({ address: server.address });
const client = new Client({ connection, namespace: server.namespace });
const workers = new Map<VariantName, VariantWorker>();
const phases: Phase[] = [];
const started = new Date();
const log = (line: string) => process.stdout.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);

try {
  for (const v of variants) {
    const worker = new VariantWorker(v, { address: server.address, namespace: server.namespace, anthropicUrl: standin.url, openaiUrl: standin.url });
    try {
      await worker.start();
      workers.set(v, worker);
      log(`${v} worker polling (pid ${worker.pid})`);
    } catch (error) {
      if (v === 'floor' || v === 'keel') throw error;
      notes.push(`${LABELS[v]} did not run: its worker failed to start: ${String((error as Error).message).split('\n').slice(0, 6).join(' ')}`);
    }
  }
  const ctx: Context = { client, serverPid: server.process.pid!, standin, workspace, sizes, restart: async (w) => { await w.stop(); await w.start(); } };
  for (const scenario of scenarios) {
    const order = SCENARIO_VARIANTS[scenario].filter((v) => workers.has(v));
    for (let round = 0; round < rounds; round++) {
      const rotated = [...order.slice(round % order.length), ...order.slice(0, round % order.length)];
      for (const v of rotated) {
        try {
          const p = await runScenario(scenario, ctx, workers.get(v)!, round);
          phases.push(p);
          if (p.modelCalls !== p.steps && scenario !== 'parked') notes.push(`${scenario} round ${round + 1} ${v}: ${p.modelCalls} model calls for ${p.steps} steps`);
          log(`${scenario} round ${round + 1}/${rounds} ${v}: ${p.steps} steps, ${(p.wallMs / 1000).toFixed(1)} s, worker ${(p.workerCpuMs / p.steps).toFixed(1)} ms/step, server ${(p.serverCpuMs / p.steps).toFixed(1)} ms/step, ${(p.eventsTotal / p.steps).toFixed(1)} events/step, load ${p.loadAverage1m}`);
        } catch (error) {
          const message = `${scenario} round ${round + 1} ${v} failed: ${(error as Error).message.split('\n')[0]}`;
          log(message);
          notes.push(message);
          if (v === 'floor' || v === 'keel') throw error;
        }
      }
    }
  }
} finally {
  for (const w of workers.values()) await w.stop();
  await connection.close();
  await standin.close();
  await server.stop();
  await fs.rm(dir, { recursive: true, force: true });
  await fs.rm(workspace, { recursive: true, force: true });
}

const summary = summarise(phases);
const meta = {
  run: `\`npm run bench -- --scenario ${scenarios.join(',')} --rounds ${rounds}${values.quick ? ' --quick' : ''}\``,
  when: started.toISOString(),
  machine: `${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, load average at the end ${loadAverage().join(' ')}`,
  versions: `Node ${process.version}, Temporal CLI ${server.version.replace(/\s+/g, ' ')}`,
  sizes: JSON.stringify(sizes),
};
await fs.mkdir(values.out, { recursive: true });
await fs.writeFile(path.join(values.out, `${name}.json`), `${JSON.stringify({ meta, sizes, notes, summary, phases }, null, 2)}\n`);
const md = markdown(`Benchmark: ${name}`, meta, summary, notes);
await fs.writeFile(path.join(values.out, `${name}.md`), md);
for (const [scenario, rows] of Object.entries(summary)) {
  if (rows.some((r) => r.variant !== 'floor' && Object.keys(r.ratios).length)) {
    await fs.writeFile(path.join(values.out, `${name}-${scenario}.svg`), svgChart(`${scenario}: ratio to the floor (median, min–max over ${rounds} rounds)`, rows));
  }
}
console.log(md);
