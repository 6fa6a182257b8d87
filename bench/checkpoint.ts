// `npx tsx bench/checkpoint.ts [--rounds 3] [--files 10000] [--impl PATH --name NAME]`: what a workspace checkpoint
// costs per turn (activities/workspace-checkpoint.ts) for a turn that changed 1, 100 and
// 10,000 files of a 10,000-file workspace, against two baselines measured in the same run on
// the same files: the least any checkpoint must do (read, hash and copy the changed files
// only) and a naive snapshot (read, hash and copy every file). Wall time, CPU time (user +
// system of this process: the scan's and the hashing's work) and bytes stored; the medians
// of the rounds, and the first checkpoint of the whole workspace. `--impl` measures another
// copy of activities/workspace-checkpoint.ts (the code before a change, from `git archive`),
// `--name` names the results file. Results: bench/results/checkpoint.{json,md}.
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { checkpointWorkspace as CheckpointWorkspace } from '../activities/workspace-checkpoint';
import { DEFAULT_CHECKPOINT_LIMITS } from '../machines/checkpoint-budget';

const text = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const arg = (name: string, fallback: number) => Number(text(name) ?? fallback);
const IMPL = text('impl');
const NAME = text('name') ?? 'checkpoint';
const { checkpointWorkspace } = (await import(IMPL !== undefined ? pathToFileURL(path.resolve(IMPL)).href : '../activities/workspace-checkpoint')) as { checkpointWorkspace: typeof CheckpointWorkspace };
const ROUNDS = arg('rounds', 3);
const FILES = arg('files', 10_000);
const FILE_BYTES = 1024;
const TOUCHED = [1, 100, 10_000].filter((n) => n <= FILES);

interface Sample {
  wallMs: number;
  cpuMs: number;
  bytes: number;
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function measure(body: () => Promise<number>): Promise<Sample> {
  const cpu = process.cpuUsage();
  const t = performance.now();
  const bytes = await body();
  const wallMs = performance.now() - t;
  const used = process.cpuUsage(cpu);
  return { wallMs, cpuMs: (used.user + used.system) / 1000, bytes };
}

const fileName = (i: number) => `src/d${i % 100}/f${i}.txt`;

async function copyHash(ws: string, files: string[], to: string): Promise<number> {
  let bytes = 0;
  for (const rel of files) {
    const content = await fs.readFile(path.join(ws, rel));
    const hash = createHash('sha256').update(content).digest('hex');
    await fs.writeFile(path.join(to, hash), content);
    bytes += content.length;
  }
  return bytes;
}

const root = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-bench-checkpoint-'));
const ws = path.join(root, 'ws');
const all = Array.from({ length: FILES }, (_, i) => fileName(i));
for (let d = 0; d < 100; d++) await fs.mkdir(path.join(ws, 'src', `d${d}`), { recursive: true });
for (const rel of all) await fs.writeFile(path.join(ws, rel), randomBytes(FILE_BYTES));

const results: Record<string, { checkpoint: Sample; changedOnly: Sample; fullCopy: Sample }> = {};
let firstCheckpoint: Sample | undefined;
try {
  // The first checkpoint keeps every file (what a session's turn 0 pays).
  const firstStore = path.join(root, 'store-first');
  firstCheckpoint = await measure(async () => (await checkpointWorkspace({ store: firstStore, workspace: ws, previous: null, conversation: { head: null, append: [] }, limits: DEFAULT_CHECKPOINT_LIMITS, usedBytes: 0 })).storedBytes);
  await fs.rm(firstStore, { recursive: true, force: true });
  console.log('first', JSON.stringify(firstCheckpoint));
  for (const touched of TOUCHED) {
    const samples = { checkpoint: [] as Sample[], changedOnly: [] as Sample[], fullCopy: [] as Sample[] };
    for (let round = 0; round < ROUNDS; round++) {
      const store = path.join(root, `store-${touched}-${round}`);
      const first = await checkpointWorkspace({ store, workspace: ws, previous: null, conversation: { head: null, append: [] }, limits: DEFAULT_CHECKPOINT_LIMITS, usedBytes: 0 });
      const changed = all.slice(0, touched);
      // Mtimes are compared to the millisecond: the turn's writes land in a later one.
      await new Promise((r) => setTimeout(r, 5));
      for (const rel of changed) await fs.writeFile(path.join(ws, rel), randomBytes(FILE_BYTES));
      samples.checkpoint.push(
        await measure(async () => (await checkpointWorkspace({ store, workspace: ws, previous: first.manifest, conversation: { head: null, append: [] }, limits: DEFAULT_CHECKPOINT_LIMITS, usedBytes: 0 })).storedBytes),
      );
      const a = path.join(root, `copy-changed-${touched}-${round}`);
      const b = path.join(root, `copy-all-${touched}-${round}`);
      await fs.mkdir(a);
      await fs.mkdir(b);
      samples.changedOnly.push(await measure(() => copyHash(ws, changed, a)));
      samples.fullCopy.push(await measure(() => copyHash(ws, all, b)));
      await Promise.all([store, a, b].map((d) => fs.rm(d, { recursive: true, force: true })));
    }
    const med = (xs: Sample[]): Sample => ({ wallMs: median(xs.map((x) => x.wallMs)), cpuMs: median(xs.map((x) => x.cpuMs)), bytes: median(xs.map((x) => x.bytes)) });
    results[String(touched)] = { checkpoint: med(samples.checkpoint), changedOnly: med(samples.changedOnly), fullCopy: med(samples.fullCopy) };
    console.log(touched, JSON.stringify(results[String(touched)]));
  }
} finally {
  await fs.rm(root, { recursive: true, force: true });
}

const rows = Object.entries(results).map(([touched, r]) => ({
  touched: Number(touched),
  ...r,
  ratioToChangedOnly: { wall: r.checkpoint.wallMs / r.changedOnly.wallMs, cpu: r.checkpoint.cpuMs / r.changedOnly.cpuMs },
  ratioToFullCopy: { wall: r.checkpoint.wallMs / r.fullCopy.wallMs, cpu: r.checkpoint.cpuMs / r.fullCopy.cpuMs },
}));
const out = { at: new Date().toISOString(), impl: IMPL ?? 'activities/workspace-checkpoint.ts', host: { cpus: os.cpus().length, load: os.loadavg() }, workspaceFiles: FILES, fileBytes: FILE_BYTES, rounds: ROUNDS, firstCheckpoint, rows };
await fs.mkdir('bench/results', { recursive: true });
await fs.writeFile(`bench/results/${NAME}.json`, `${JSON.stringify(out, null, 2)}\n`);
const fmt = (n: number) => n.toFixed(1);
const md = [
  `# Workspace checkpoint cost per turn (${FILES.toLocaleString('en-US')} files of ${FILE_BYTES} B, median of ${ROUNDS}; ${out.at}, load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')})`,
  '',
  `Code: ${out.impl}. First checkpoint (every file kept): ${firstCheckpoint !== undefined ? `${fmt(firstCheckpoint.wallMs)} ms wall, ${fmt(firstCheckpoint.cpuMs)} ms CPU, ${firstCheckpoint.bytes.toLocaleString('en-US')} bytes` : '—'}.`,
  '',
  '`npx tsx bench/checkpoint.ts`. Checkpoint: scan the workspace, hash what changed, store blobs and a manifest (local store).',
  'Baselines in the same run: read + SHA-256 + copy of the changed files only (the least any checkpoint does), and of every file (a naive snapshot).',
  '',
  '| files changed | checkpoint wall ms | CPU ms | bytes stored | changed-only wall / CPU ms | ratio to changed-only (wall, CPU) | full copy wall / CPU ms | ratio to full copy (wall, CPU) |',
  '|---|---|---|---|---|---|---|---|',
  ...rows.map((r) => `| ${r.touched.toLocaleString('en-US')} | ${fmt(r.checkpoint.wallMs)} | ${fmt(r.checkpoint.cpuMs)} | ${r.checkpoint.bytes.toLocaleString('en-US')} | ${fmt(r.changedOnly.wallMs)} / ${fmt(r.changedOnly.cpuMs)} | ${r.ratioToChangedOnly.wall.toFixed(2)}, ${r.ratioToChangedOnly.cpu.toFixed(2)} | ${fmt(r.fullCopy.wallMs)} / ${fmt(r.fullCopy.cpuMs)} | ${r.ratioToFullCopy.wall.toFixed(2)}, ${r.ratioToFullCopy.cpu.toFixed(2)} |`),
  '',
];
await fs.writeFile(`bench/results/${NAME}.md`, md.join('\n'));
console.log(md.join('\n'));
