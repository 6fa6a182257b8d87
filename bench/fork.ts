// `npx tsx bench/fork.ts [--turns 100] [--forks 7] [--files 1000] [--out fork] [--dir bench/results]`: what a fork costs
// (docs/fork-and-rewind.md). A session with checkpoints in a workspace of `--files` files
// runs `--turns` turns (each writes a file with write_file, against the stand-in model);
// then forks at turns spread over the session. Per fork: request → fork ready (its
// workspace laid out: the `session.forked` event in its log), and its first model call's
// cache reads (the stand-in bills cache reads as the API does). Baseline in the same run: a
// new session started with checkpoints in a copy of the parent's workspace, request → its
// turn-0 checkpoint recorded (the least a session that can be forked costs to start). A dev
// server and a worker in this process. Results: <dir>/<out>.{json,md}. `npm run bench` runs it
// as its `fork` scenario (bench/suite/harnesses.ts).
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { KeelClient } from '../client/index';
import type { Message } from '../machines/index';
import { startStandin } from '../standin/server';
import { createKeelWorker } from '../worker/worker';
import { startDevServer } from '../worker/dev-server';
import { eventsQuery, type LogEntry } from '../workflows/definitions';
import { root as repo } from './suite/variants';

const option = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : fallback;
};
const arg = (name: string, fallback: number) => Number(option(name, String(fallback)));
const TURNS = arg('turns', 100);
const FORKS = arg('forks', 7);
const FILES = arg('files', 1000);
const OUT = option('out', 'fork');
const DIR = path.resolve(repo, option('dir', 'bench/results'));

const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });
const standin = await startStandin({
  scenario: {
    rules: [
      ...Array.from({ length: TURNS }, (_, i) => ({
        match: { lastUserContains: `TURN ${i + 1}.`, hasToolResults: false },
        reply: { content: [{ type: 'tool_use' as const, id: `toolu_w${i + 1}`, name: 'write_file', input: { path: `turn-${i + 1}.txt`, content: `written at turn ${i + 1}\n`.repeat(20) } }] },
      })),
      { match: { hasToolResults: true }, reply: text('done') },
      { match: { lastUserContains: 'FORK' }, reply: text('forked reply') },
      { match: {}, reply: text('ok') },
    ],
  },
});
const root = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'keel-bench-fork-')));
const workspace = path.join(root, 'ws');
for (let d = 0; d < Math.ceil(FILES / 100); d++) {
  await fs.mkdir(path.join(workspace, 'src', `d${d}`), { recursive: true });
  await Promise.all(Array.from({ length: Math.min(100, FILES - d * 100) }, (_, f) => fs.writeFile(path.join(workspace, 'src', `d${d}`, `f${f}.ts`), `export const v${d}_${f} = ${f};\n`.repeat(10))));
}
const server = await startDevServer({ port: 0, readyTimeoutMs: 120_000, taskQueuePartitions: 1 });
const connection = await NativeConnection.connect({ address: server.address });
const taskQueue = 'bench-fork';
const worker = await createKeelWorker({ connection, namespace: server.namespace, taskQueue, env: { ...process.env, ANTHROPIC_API_KEY: 'sk-ant-standin', ANTHROPIC_BASE_URL: standin.url }, log: () => {} });
const running = worker.run();
const client = new Client({ connection: (await import('@temporalio/client')).Connection.lazy({ address: server.address }), namespace: server.namespace });
const keel = await KeelClient.connect({ client, taskQueue });

const logOf = async (id: string): Promise<LogEntry[]> => (await client.workflow.getHandle(id).query(eventsQuery, { from: 0, limit: 500 })).entries;
async function until(id: string, found: (entries: LogEntry[]) => boolean): Promise<void> {
  for (;;) {
    const entries = await logOf(id).catch(() => [] as LogEntry[]);
    if (found(entries)) return;
    await new Promise((r) => setTimeout(r, 10));
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const usageOf = (marker: string) => {
  const r = standin.requests.find((q) => JSON.stringify((q.body as { messages?: Message[] }).messages?.at(-1) ?? '').includes(marker));
  return r?.usage ?? null;
};

let out: Record<string, unknown>;
try {
  const parent = await keel.startSession({ workspace, policy: { mode: 'full-auto' }, checkpoints: true });
  const t0 = Date.now();
  for (let k = 1; k <= TURNS; k++) await parent.send(`TURN ${k}.`);
  const turnsMs = Date.now() - t0;
  console.log(`${TURNS} turns in ${turnsMs} ms`);

  const forkTurns = Array.from({ length: FORKS }, (_, i) => Math.max(1, Math.round(((i + 1) * TURNS) / FORKS)));
  const forks: { turn: number; readyMs: number; firstCall: { input: number; cacheRead: number; cacheWrite: number } | null }[] = [];
  for (const turn of forkTurns) {
    const t = performance.now();
    const fork = await keel.forkSession(parent.id, { atTurn: turn });
    await until(fork.id, (es) => es.some((e) => e.kind === 'session.forked'));
    const readyMs = performance.now() - t;
    await fork.session.send(`FORK at ${turn}`);
    const u = usageOf(`FORK at ${turn}`);
    forks.push({ turn, readyMs, firstCall: u === null ? null : { input: u.input_tokens, cacheRead: u.cache_read_input_tokens, cacheWrite: u.cache_creation_input_tokens } });
    console.log(`fork at ${turn}: ready in ${readyMs.toFixed(0)} ms; first call ${JSON.stringify(forks.at(-1)!.firstCall)}`);
    await fork.session.close("bench over").catch(() => null);
  }

  // Baseline: a new session in a copy of the workspace, request → turn 0's checkpoint recorded.
  const fresh: number[] = [];
  for (let i = 0; i < 3; i++) {
    const copy = path.join(root, `copy-${i}`);
    await fs.cp(workspace, copy, { recursive: true, filter: (src) => !src.includes(`${path.sep}.keel`) });
    const t = performance.now();
    const s = await keel.startSession({ workspace: copy, policy: { mode: 'full-auto' }, checkpoints: true });
    await until(s.id, (es) => es.some((e) => e.kind === 'checkpoint.recorded'));
    fresh.push(performance.now() - t);
  }
  const p50 = median(forks.map((f) => f.readyMs));
  const baseline = median(fresh);
  out = {
    at: new Date().toISOString(),
    host: { cpus: os.cpus().length, load: os.loadavg() },
    turns: TURNS,
    files: FILES,
    turnsMs,
    forks,
    forkReadyP50Ms: p50,
    newSessionReadyP50Ms: baseline,
    ratio: p50 / baseline,
    firstCallCacheReadShareP50: median(forks.map((f) => (f.firstCall === null ? 0 : f.firstCall.cacheRead / (f.firstCall.cacheRead + f.firstCall.input + f.firstCall.cacheWrite)))),
  };
} finally {
  await Promise.allSettled([standin.close()]);
  worker.worker.shutdown();
  await running.catch(() => {});
  await connection.close();
  await server.stop();
  await fs.rm(root, { recursive: true, force: true });
}
await fs.mkdir(DIR, { recursive: true });
await fs.writeFile(path.join(DIR, `${OUT}.json`), `${JSON.stringify(out, null, 2)}\n`);
const o = out as { forks: { turn: number; readyMs: number; firstCall: { input: number; cacheRead: number; cacheWrite: number } | null }[]; forkReadyP50Ms: number; newSessionReadyP50Ms: number; ratio: number; firstCallCacheReadShareP50: number; turnsMs: number };
const md = [
  `# Fork latency and cache reads (${TURNS}-turn session, ${FILES.toLocaleString('en-US')} files; ${String(out.at)}, load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')})`,
  '',
  `\`npx tsx bench/fork.ts --turns ${TURNS} --forks ${FORKS} --files ${FILES}\`. Ready: the fork's workspace laid out (its \`session.forked\` event). Baseline in the same run: a new session with checkpoints in a copy of the workspace, to its turn-0 checkpoint.`,
  '',
  `- fork ready p50: **${o.forkReadyP50Ms.toFixed(0)} ms**; new session ready p50: ${o.newSessionReadyP50Ms.toFixed(0)} ms (ratio ${o.ratio.toFixed(2)})`,
  `- the fork's first model call: cache reads are ${(o.firstCallCacheReadShareP50 * 100).toFixed(1)} % of its prompt (p50)`,
  `- the ${TURNS} turns took ${(o.turnsMs / 1000).toFixed(1)} s`,
  '',
  '| fork at turn | ready ms | first call: input | cache read | cache write |',
  '|---|---|---|---|---|',
  ...o.forks.map((f) => `| ${f.turn} | ${f.readyMs.toFixed(0)} | ${f.firstCall?.input ?? '—'} | ${f.firstCall?.cacheRead ?? '—'} | ${f.firstCall?.cacheWrite ?? '—'} |`),
  '',
];
await fs.writeFile(path.join(DIR, `${OUT}.md`), md.join('\n'));
console.log(md.join('\n'));
process.exit(0);
