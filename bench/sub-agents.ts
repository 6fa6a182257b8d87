// `npx tsx bench/sub-agents.ts [--rounds 3]`: what delegating costs (docs/sub-agents.md).
// One dev server and one Keel worker process (worker/main.ts, as `keel worker` runs it), the
// stand-in in this process (not measured). Two variants of the same work, alternated round by
// round, each a fresh session's one turn:
// - `children`: the session's model calls `agent` four times in one message; each child does
//   two list_dir steps and answers (3 model calls); the parent then sums up. 14 model calls.
// - `solo`: the session does 13 list_dir steps itself and answers. 14 model calls.
// Measured: CPU time (user + system, /proc) of the worker and the dev server over the turn,
// per model call ("step"); the figure is children ÷ solo (target ≤ 1.1). And a fork's first
// request: its prompt and how much of it was read from the prompt cache (the stand-in bills
// cache reads as the API does), with the session's 1 h cache TTL.
// Results: bench/results/sub-agents.{json,md}.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { KeelClient } from '../client/keel-client';
import { startStandin } from '../standin/server';
import { startDevServer } from '../worker/dev-server';
import { cpuMs, loadAverage } from './suite/proc';
import { root, VariantWorker } from './suite/variants';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const ROUNDS = arg('rounds', 3);
const CHILDREN = 4;
const SOLO_TOOL_STEPS = 13;
const say = (text: string) => ({ content: [{ type: 'text' as const, text }] });
const use = (name: string, input: Record<string, unknown>, id: string) => ({ content: [{ type: 'tool_use' as const, name, id, input }] });
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const rules = [
  // The parent delegating: four children in one message, then its summary.
  { name: 'parent delegates', match: { systemContains: 'PARENT', lastUserContains: 'DELEGATE' }, reply: { content: Array.from({ length: CHILDREN }, (_, k) => ({ type: 'tool_use' as const, name: 'agent', id: `toolu_a${k}`, input: { description: `part ${k}`, prompt: `CHILD TASK ${k}` } })) } },
  { name: 'parent sums up', match: { systemContains: 'PARENT', hasToolResults: true, lastUserContains: 'child done' }, reply: say('All parts done.') },
  // A fork: the parent's conversation so far, one answer.
  { name: 'parent forks', match: { systemContains: 'PARENT', lastUserContains: 'FORK IT' }, reply: use('agent', { description: 'fork', prompt: 'FORK TASK', fork: true }, 'toolu_fork') },
  { name: 'fork answers', match: { lastUserContains: 'FORK TASK' }, reply: say('fork done') },
  { name: 'parent after fork', match: { systemContains: 'PARENT', hasToolResults: true }, reply: say('Fork answered.') },
  // The session doing it all itself.
  ...Array.from({ length: SOLO_TOOL_STEPS }, (_, t) => ({ name: `solo ${t + 1}`, match: { systemContains: 'SOLO', turn: t + 1 }, reply: use('list_dir', {}, `toolu_s${t}`) })),
  { name: 'solo answers', match: { systemContains: 'SOLO', turn: SOLO_TOOL_STEPS + 1 }, reply: say('All parts done.') },
  // A child: two list_dir steps, then its answer.
  { name: 'child 1', match: { lastUserContains: 'CHILD TASK', hasToolResults: false }, reply: use('list_dir', {}, 'toolu_c1') },
  { name: 'child 2', match: { turn: 2 }, reply: use('list_dir', {}, 'toolu_c2') },
  { name: 'child 3', match: { turn: 3 }, reply: say('child done') },
];

const log = (line: string) => console.log(`[sub-agents bench] ${line}`);
const load0 = loadAverage();
const server = await startDevServer({ port: 0, readyTimeoutMs: 180_000 });
const standin = await startStandin({ scenario: { rules } });
const workspace = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-bench-sub-agents-'));
for (let i = 0; i < 20; i++) await fs.writeFile(path.join(workspace, `file-${i}.txt`), `file ${i}\n`);
const worker = new VariantWorker('keel', { address: server.address, namespace: server.namespace, anthropicUrl: standin.url, openaiUrl: standin.url }, {}, log);
await worker.start();
const keel = await KeelClient.connect({ address: server.address, namespace: server.namespace, taskQueue: worker.taskQueue });
const serverPid = server.process.pid!;
const cpuNow = () => ({ worker: cpuMs(worker.pid), server: cpuMs(serverPid) });

interface Sample { variant: string; steps: number; workerCpuMs: number; serverCpuMs: number; wallMs: number; perStepMs: number }
async function turn(variant: 'children' | 'solo'): Promise<Sample> {
  const session = await keel.startSession({ workspace, system: variant === 'children' ? 'You are PARENT.' : 'You are SOLO.', policy: { mode: 'ask' }, ...(variant === 'children' ? { agents: {} } : {}) });
  const before = standin.requests.length;
  const c0 = cpuNow();
  const t0 = performance.now();
  const result = await session.send(variant === 'children' ? 'DELEGATE the parts' : 'do the parts yourself');
  const wallMs = performance.now() - t0;
  const c1 = cpuNow();
  if (result.outcome !== 'completed') throw new Error(`${variant}: the turn ended ${result.outcome}: ${result.output}`);
  const steps = standin.requests.length - before;
  await session.close();
  const workerCpuMs = c1.worker - c0.worker;
  const serverCpuMs = c1.server - c0.server;
  return { variant, steps, workerCpuMs, serverCpuMs, wallMs, perStepMs: (workerCpuMs + serverCpuMs) / steps };
}

const samples: Sample[] = [];
try {
  // A warm-up of each (the worker's first sessions load and JIT what the rounds then reuse).
  await turn('children');
  await turn('solo');
  for (let r = 0; r < ROUNDS; r++) {
    for (const v of r % 2 === 0 ? (['children', 'solo'] as const) : (['solo', 'children'] as const)) {
      const s = await turn(v);
      samples.push(s);
      log(`round ${r + 1} ${v}: ${s.steps} steps, worker ${s.workerCpuMs} ms + server ${s.serverCpuMs} ms CPU, ${s.perStepMs.toFixed(1)} ms/step, ${(s.wallMs / 1000).toFixed(1)} s`);
    }
  }
  // The fork: the parent's first turn writes the cache, the fork's first request reads it.
  const session = await keel.startSession({ workspace, system: 'You are PARENT.', policy: { mode: 'ask' }, promptCacheTtl: '1h', agents: {} });
  const forked = await session.send('FORK IT please');
  if (forked.outcome !== 'completed') throw new Error(`fork: the turn ended ${forked.outcome}`);
  const parentFirst = standin.requests.filter((r) => r.rule === 'parent forks').at(-1)!;
  const forkFirst = standin.requests.filter((r) => r.rule === 'fork answers').at(-1)!;
  const u = forkFirst.usage!;
  const prompt = u.input_tokens + (u.cache_read_input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0);
  const ttls = [...JSON.stringify(forkFirst.body).matchAll(/"ttl":"(\w+)"/g)].map((m) => m[1]);
  const fork = { promptTokens: prompt, cacheReadInputTokens: u.cache_read_input_tokens ?? 0, cacheCreationInputTokens: u.cache_creation_input_tokens ?? 0, inputTokens: u.input_tokens, readShare: (u.cache_read_input_tokens ?? 0) / prompt, parentFirstCall: parentFirst.usage, cacheTtls: ttls };
  await session.close();

  const per = (v: string) => median(samples.filter((s) => s.variant === v).map((s) => s.perStepMs));
  const ratio = per('children') / per('solo');
  const load1 = loadAverage();
  const out = { date: new Date().toISOString(), rounds: ROUNDS, children: CHILDREN, cpus: os.cpus().length, loadAverage: { start: load0, end: load1 }, perStepMs: { children: per('children'), solo: per('solo') }, ratio, target: 1.1, fork, samples };
  await fs.mkdir(path.join(root, 'bench/results'), { recursive: true });
  await fs.writeFile(path.join(root, 'bench/results/sub-agents.json'), `${JSON.stringify(out, null, 2)}\n`);
  const md = [
    '# Sub-agents: CPU per step, and a fork\'s cache reads',
    '',
    `\`npx tsx bench/sub-agents.ts --rounds ${ROUNDS}\`, ${out.date}, ${out.cpus} CPUs, load average ${load0[0]} at the start, ${load1[0]} at the end${load0[0] > out.cpus ? ' (a loaded machine: the figures are noisy)' : ''}.`,
    '',
    '| variant | model calls | worker + server CPU per call (median of the rounds) |',
    '|---|---|---|',
    `| a turn with ${CHILDREN} parallel children (2 tool steps + answer each) | ${samples.find((s) => s.variant === 'children')?.steps} | ${per('children').toFixed(1)} ms |`,
    `| the same session doing ${SOLO_TOOL_STEPS} tool steps itself | ${samples.find((s) => s.variant === 'solo')?.steps} | ${per('solo').toFixed(1)} ms |`,
    '',
    `**children ÷ solo: ${ratio.toFixed(2)}×** (target ≤ 1.1×).`,
    '',
    `A fork's first request: ${fork.promptTokens} prompt tokens, ${fork.cacheReadInputTokens} read from the cache (${(fork.readShare * 100).toFixed(1)} %), ${fork.cacheCreationInputTokens} written, ${fork.inputTokens} uncached; cache_control TTLs sent: ${ttls.join(', ') || 'none'}.`,
    '',
  ].join('\n');
  await fs.writeFile(path.join(root, 'bench/results/sub-agents.md'), md);
  console.log(md);
} finally {
  await keel.close?.();
  await worker.stop();
  await standin.close();
  await server.stop();
  await fs.rm(workspace, { recursive: true, force: true });
}
