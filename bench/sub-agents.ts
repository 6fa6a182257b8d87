// `npx tsx bench/sub-agents.ts [--rounds 3] [--child-steps 2,8] [--tool list_dir|run_command] [--out sub-agents] [--dir bench/results] [--no-fork]`:
// what delegating costs (docs/sub-agents.md "What it costs"). One dev server and one Keel
// worker process (worker/main.ts, as `keel worker` runs it), the stand-in in this process (not
// measured). For each number S of tool steps per child, two variants of the same work,
// alternated round by round, each a fresh session's one turn:
// - `children`: the session's model calls `agent` four times in one message; each child does S
//   tool steps and answers (S + 1 model calls); the parent then sums up. 4(S + 1) + 2 model calls.
// - `solo`: the session does 4(S + 1) + 1 tool steps itself and answers: as many model calls.
// The tool is list_dir (a local activity) or run_command (an activity; `--tool run_command`,
// policy full-auto in both variants, so each child step leaves a command for the parent's stream).
// Measured: CPU time (user + system, /proc) of the worker and the dev server over the turn.
// - Per model call ("step"), start included: children ÷ solo. Four children start and answer
//   where the solo session does not, so this figure carries four workflow starts and ends.
// - Per step, starts amortised away: between the smallest and the largest S the two variants
//   add the same number of model calls (4 × ΔS), so (children(S₂) − children(S₁)) ÷
//   (solo(S₂) − solo(S₁)) is what a child's step costs against a session's, every start and
//   end cancelled out (the target ≤ 1.1 is this ratio's).
// - What each workflow writes to history per step (events, workflow tasks, activities, local
//   activities, signals, updates, search-attribute upserts), from one round's histories: a
//   child's and the solo session's, the difference between S₁ and S₂ divided by the steps added.
// And a fork's first request: its prompt and how much of it was read from the prompt cache (the
// stand-in bills cache reads as the API does), with the session's 1 h cache TTL.
// Results: <dir>/<out>.{json,md}. `npm run bench` runs it as its `sub-agents` scenario
// (bench/suite/harnesses.ts).
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { KeelClient } from '../client/keel-client';
import { startStandin } from '../standin/server';
import { startDevServer } from '../worker/dev-server';
import { countHistory, type HistoryCounts } from './suite/history-events';
import { cpuMs, loadAverage } from './suite/proc';
import { root, VariantWorker } from './suite/variants';

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : fallback;
};
const ROUNDS = Number(arg('rounds', '3'));
const CHILD_STEPS = arg('child-steps', '2,8').split(',').map(Number);
const TOOL = arg('tool', 'list_dir') as 'list_dir' | 'run_command';
const OUT = arg('out', 'sub-agents');
const DIR = path.resolve(root, arg('dir', 'bench/results'));
const FORK = !process.argv.includes('--no-fork');
const CHILDREN = 4;
const soloSteps = (s: number) => CHILDREN * (s + 1) + 1;
const say = (text: string) => ({ content: [{ type: 'text' as const, text }] });
const toolInput = TOOL === 'run_command' ? { command: 'echo step' } : {};
const use = (input: Record<string, unknown>, id: string) => ({ content: [{ type: 'tool_use' as const, name: TOOL, id, input }] });
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const typeOf = (s: number) => `steps-${s}`;

const rules = [
  // A fork: the parent's conversation so far, one answer.
  { name: 'parent forks', match: { systemContains: 'PARENT', lastUserContains: 'FORK IT' }, reply: { content: [{ type: 'tool_use' as const, name: 'agent', id: 'toolu_fork', input: { description: 'fork', prompt: 'FORK TASK', fork: true } }] } },
  { name: 'fork answers', match: { lastUserContains: 'FORK TASK' }, reply: say('fork done') },
  { name: 'parent after fork', match: { systemContains: 'PARENT FORKING', hasToolResults: true }, reply: say('Fork answered.') },
  ...CHILD_STEPS.flatMap((s) => [
    // The parent delegating: four children in one message, then its summary.
    { name: `parent delegates S${s}`, match: { systemContains: `PARENT S${s}.`, lastUserContains: 'DELEGATE' }, reply: { content: Array.from({ length: CHILDREN }, (_, k) => ({ type: 'tool_use' as const, name: 'agent', id: `toolu_a${k}`, input: { description: `part ${k}`, prompt: `CHILD TASK ${k}`, subagent_type: typeOf(s) } })) } },
    { name: `parent sums up S${s}`, match: { systemContains: `PARENT S${s}.`, hasToolResults: true }, reply: say('All parts done.') },
    // A child: S tool steps, then its answer.
    ...Array.from({ length: s }, (_, t) => ({ name: `child S${s} step ${t + 1}`, match: { systemContains: `CHILD S${s}.`, turn: t + 1 }, reply: use(toolInput, `toolu_c${t}`) })),
    { name: `child S${s} answers`, match: { systemContains: `CHILD S${s}.`, turn: s + 1 }, reply: say('child done') },
    // The session doing it all itself.
    ...Array.from({ length: soloSteps(s) }, (_, t) => ({ name: `solo S${s} step ${t + 1}`, match: { systemContains: `SOLO S${s}.`, turn: t + 1 }, reply: use(toolInput, `toolu_s${t}`) })),
    { name: `solo S${s} answers`, match: { systemContains: `SOLO S${s}.`, turn: soloSteps(s) + 1 }, reply: say('All parts done.') },
  ]),
];

const log = (line: string) => console.log(`[sub-agents bench] ${line}`);
const load0 = loadAverage();
const server = await startDevServer({ port: 0, readyTimeoutMs: 180_000 });
const standin = await startStandin({ scenario: { rules } });
const workspace = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-bench-sub-agents-'));
for (let i = 0; i < 20; i++) await fs.writeFile(path.join(workspace, `file-${i}.txt`), `file ${i}\n`);
const worker = new VariantWorker('keel', { address: server.address, namespace: server.namespace, anthropicUrl: standin.url, openaiUrl: standin.url }, {}, log);
await worker.start();
const connection = await Connection.connect({ address: server.address });
const client = new Client({ connection, namespace: server.namespace });
const keel = await KeelClient.connect({ client, taskQueue: worker.taskQueue });
const serverPid = server.process.pid!;
const cpuNow = () => ({ worker: cpuMs(worker.pid), server: cpuMs(serverPid) });
const policy = { mode: TOOL === 'run_command' ? ('full-auto' as const) : ('ask' as const) };
const agents = { types: Object.fromEntries(CHILD_STEPS.map((s) => [typeOf(s), { description: `does ${s} steps`, system: `You are CHILD S${s}.`, maxSteps: s + 5 }])) };

type Variant = 'children' | 'solo';
interface Sample { variant: Variant; childSteps: number; steps: number; workerCpuMs: number; serverCpuMs: number; wallMs: number; perStepMs: number }
interface Histories { parent: HistoryCounts; child: HistoryCounts | null }

async function historyOf(id: string): Promise<HistoryCounts> {
  return countHistory((await client.workflow.getHandle(id).fetchHistory()).events ?? []);
}

async function turn(variant: Variant, s: number): Promise<{ sample: Sample; histories: () => Promise<Histories> }> {
  const session = await keel.startSession({ workspace, system: variant === 'children' ? `You are PARENT S${s}.` : `You are SOLO S${s}.`, policy, ...(variant === 'children' ? { agents } : {}) });
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
  const id = session.workflowHandle.workflowId;
  return {
    sample: { variant, childSteps: s, steps, workerCpuMs, serverCpuMs, wallMs, perStepMs: (workerCpuMs + serverCpuMs) / steps },
    histories: async () => ({ parent: await historyOf(id), child: variant === 'children' ? await historyOf(`${id}/agent-toolu_a0`) : null }),
  };
}

const samples: Sample[] = [];
const histories: Record<string, Histories> = {};
try {
  // A warm-up of each (the worker's first sessions load and JIT what the rounds then reuse).
  for (const s of CHILD_STEPS) {
    await turn('children', s);
    await turn('solo', s);
  }
  for (let r = 0; r < ROUNDS; r++) {
    for (const s of CHILD_STEPS) {
      for (const v of r % 2 === 0 ? (['children', 'solo'] as const) : (['solo', 'children'] as const)) {
        const { sample, histories: read } = await turn(v, s);
        samples.push(sample);
        // History is counted after the round's CPU was read (reading it costs the server).
        if (r === 0) histories[`${v} S${s}`] = await read();
        log(`round ${r + 1} S=${s} ${v}: ${sample.steps} steps, worker ${sample.workerCpuMs} ms + server ${sample.serverCpuMs} ms CPU, ${sample.perStepMs.toFixed(1)} ms/step, ${(sample.wallMs / 1000).toFixed(1)} s`);
      }
    }
  }
  let fork: Record<string, unknown> | null = null;
  if (FORK) {
    // The fork: the parent's first turn writes the cache, the fork's first request reads it.
    const session = await keel.startSession({ workspace, system: 'You are PARENT FORKING.', policy, promptCacheTtl: '1h', agents: {} });
    const forked = await session.send('FORK IT please');
    if (forked.outcome !== 'completed') throw new Error(`fork: the turn ended ${forked.outcome}`);
    const parentFirst = standin.requests.filter((r) => r.rule === 'parent forks').at(-1)!;
    const forkFirst = standin.requests.filter((r) => r.rule === 'fork answers').at(-1)!;
    const u = forkFirst.usage!;
    const prompt = u.input_tokens + (u.cache_read_input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0);
    const ttls = [...JSON.stringify(forkFirst.body).matchAll(/"ttl":"(\w+)"/g)].map((m) => m[1]);
    fork = { promptTokens: prompt, cacheReadInputTokens: u.cache_read_input_tokens ?? 0, cacheCreationInputTokens: u.cache_creation_input_tokens ?? 0, inputTokens: u.input_tokens, readShare: (u.cache_read_input_tokens ?? 0) / prompt, parentFirstCall: parentFirst.usage, cacheTtls: ttls };
    await session.close();
  }

  const of = (v: Variant, s: number) => samples.filter((x) => x.variant === v && x.childSteps === s);
  const per = (v: Variant, s: number) => median(of(v, s).map((x) => x.perStepMs));
  const total = (v: Variant, s: number) => median(of(v, s).map((x) => x.workerCpuMs + x.serverCpuMs));
  const s1 = Math.min(...CHILD_STEPS);
  const s2 = Math.max(...CHILD_STEPS);
  const added = CHILDREN * (s2 - s1);
  const marginal = s2 > s1 ? { children: (total('children', s2) - total('children', s1)) / added, solo: (total('solo', s2) - total('solo', s1)) / added } : null;
  const marginalRatio = marginal !== null ? marginal.children / marginal.solo : null;
  // Per step from history: what S₂ adds over S₁, per step added (a child: per its own step; the solo session: per its step).
  const perStepHistory = (a: HistoryCounts | null | undefined, b: HistoryCounts | null | undefined, steps: number) =>
    a && b ? Object.fromEntries(Object.keys(a).map((k) => [k, ((b[k as keyof HistoryCounts] - a[k as keyof HistoryCounts]) / steps)])) : null;
  const childPerStep = s2 > s1 ? perStepHistory(histories[`children S${s1}`]?.child, histories[`children S${s2}`]?.child, s2 - s1) : null;
  const soloPerStep = s2 > s1 ? perStepHistory(histories[`solo S${s1}`]?.parent, histories[`solo S${s2}`]?.parent, soloSteps(s2) - soloSteps(s1)) : null;
  const parentPerChildStep = s2 > s1 ? perStepHistory(histories[`children S${s1}`]?.parent, histories[`children S${s2}`]?.parent, added) : null;
  const load1 = loadAverage();
  const out = {
    date: new Date().toISOString(),
    rounds: ROUNDS,
    children: CHILDREN,
    childSteps: CHILD_STEPS,
    tool: TOOL,
    cpus: os.cpus().length,
    loadAverage: { start: load0, end: load1 },
    perStepMs: Object.fromEntries(CHILD_STEPS.map((s) => [`S${s}`, { children: per('children', s), solo: per('solo', s), ratio: per('children', s) / per('solo', s) }])),
    marginalPerStepMs: marginal,
    marginalRatio,
    target: 1.1,
    histories,
    perStepHistory: { child: childPerStep, parentPerChildStep, solo: soloPerStep },
    fork,
    samples,
  };
  await fs.mkdir(DIR, { recursive: true });
  await fs.writeFile(path.join(DIR, `${OUT}.json`), `${JSON.stringify(out, null, 2)}\n`);
  const row = (name: string, h: Record<string, number> | null | undefined) =>
    h ? `| ${name} | ${['events', 'workflowTasks', 'activities', 'localActivities', 'signalsSent', 'signalsReceived', 'updates', 'searchAttributeUpserts', 'patchMarkers'].map((k) => (Math.round((h[k] ?? 0) * 100) / 100).toString()).join(' | ')} |` : `| ${name} | (not measured) |`;
  const md = [
    "# Sub-agents: CPU per step, history per step, and a fork's cache reads",
    '',
    `\`npx tsx bench/sub-agents.ts --rounds ${ROUNDS} --child-steps ${CHILD_STEPS.join(',')} --tool ${TOOL}\`, ${out.date}, ${out.cpus} CPUs, load average ${load0[0]} at the start, ${load1[0]} at the end${load0[0] > out.cpus ? ' (a loaded machine: the figures are noisy)' : ''}. Tool steps: \`${TOOL}\`.`,
    '',
    '| tool steps per child (S) | model calls per turn | children: worker + server CPU per call | solo: per call | children ÷ solo (4 child starts included) |',
    '|---|---|---|---|---|',
    ...CHILD_STEPS.map((s) => `| ${s} | ${of('children', s)[0]?.steps} | ${per('children', s).toFixed(1)} ms | ${per('solo', s).toFixed(1)} ms | ${(per('children', s) / per('solo', s)).toFixed(2)}× |`),
    '',
    marginal !== null
      ? `**Per step, starts amortised away** (S ${s1} → ${s2}: both variants add ${added} model calls): a child's step ${marginal.children.toFixed(1)} ms, a session's ${marginal.solo.toFixed(1)} ms: **${marginalRatio!.toFixed(2)}×** (target ≤ 1.1×).`
      : '',
    '',
    'History per step (S₂ − S₁ over the steps added; one round):',
    '',
    '| per step | events | workflow tasks | activities | local activities | signals sent | signals received | updates | search-attribute upserts | patch markers |',
    '|---|---|---|---|---|---|---|---|---|---|',
    row("a child's step (the child's history)", childPerStep),
    row("…in the parent's history, per child step", parentPerChildStep),
    row("a session's step (the solo session's history)", soloPerStep),
    '',
    'Whole histories (one round):',
    '',
    '| workflow | events | workflow tasks | activities | local activities | signals sent | signals received | updates | search-attribute upserts | patch markers |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...Object.entries(histories).flatMap(([k, h]) => [row(`${k}: session`, h.parent as unknown as Record<string, number>), ...(h.child ? [row(`${k}: one child`, h.child as unknown as Record<string, number>)] : [])]),
    '',
    fork !== null ? `A fork's first request: ${String(fork.promptTokens)} prompt tokens, ${String(fork.cacheReadInputTokens)} read from the cache (${((fork.readShare as number) * 100).toFixed(1)} %), ${String(fork.cacheCreationInputTokens)} written, ${String(fork.inputTokens)} uncached; cache_control TTLs sent: ${(fork.cacheTtls as string[]).join(', ') || 'none'}.` : '',
    '',
  ].join('\n');
  await fs.writeFile(path.join(DIR, `${OUT}.md`), md);
  console.log(md);
} finally {
  await connection.close();
  await worker.stop();
  await standin.close();
  await server.stop();
  await fs.rm(workspace, { recursive: true, force: true });
}
