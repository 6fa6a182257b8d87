// `npm run bench:worker-start`: start time and memory of the worker run from source
// (`npm run worker`: tsx, workflows bundled at start) against the compiled worker
// (`npm start`: node dist/worker/main.js with the prebuilt bundle), interleaved over
// rounds against one Temporal dev server. Start time is spawn → "keel worker: polling";
// memory is the process's RSS then and its peak (VmHWM). Writes
// bench/results/worker-start.{json,md}. Needs `npm run build` first (it runs it).
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDevServer } from '../worker/dev-server';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const rounds = Number(process.argv[2] ?? 5);

interface Sample {
  startMs: number;
  rssMiB: number;
  peakMiB: number;
}

const variants = {
  source: [process.execPath, ['--import', 'tsx', 'worker/main.ts']],
  compiled: [process.execPath, ['dist/worker/main.js']],
} as const;
type Variant = keyof typeof variants;

function status(pid: number, field: string): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith(`${field}:`));
  return Number(line?.split(/\s+/)[1] ?? Number.NaN) / 1024;
}

async function once(variant: Variant, address: string): Promise<Sample> {
  const [cmd, args] = variants[variant];
  const started = performance.now();
  const child = spawn(cmd, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TEMPORAL_ADDRESS: address, KEEL_TASK_QUEUE: `bench-start-${variant}` } });
  let out = '';
  const sample = await new Promise<Sample>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      if (!out.includes('keel worker: polling')) return;
      const startMs = performance.now() - started;
      resolve({ startMs, rssMiB: status(child.pid!, 'VmRSS'), peakMiB: status(child.pid!, 'VmHWM') });
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${variant} exited ${code}: ${out}`)));
  });
  child.removeAllListeners('exit');
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
  return sample;
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { min: s[0]!, median: s[Math.floor(s.length / 2)]!, max: s.at(-1)! };
};

execFileSync(process.execPath, ['--import', 'tsx', 'scripts/build.ts'], { cwd: root, stdio: 'inherit' });
const server = await startDevServer({ port: 0 });
const samples: Record<Variant, Sample[]> = { source: [], compiled: [] };
try {
  for (let r = 0; r < rounds; r++) {
    const order: Variant[] = r % 2 ? ['compiled', 'source'] : ['source', 'compiled'];
    for (const v of order) samples[v].push(await once(v, server.address));
    process.stdout.write(`round ${r + 1}/${rounds}\n`);
  }
} finally {
  await server.stop();
}

const summary = Object.fromEntries(
  (Object.keys(samples) as Variant[]).map((v) => [
    v,
    { startMs: stats(samples[v].map((s) => s.startMs)), rssMiB: stats(samples[v].map((s) => s.rssMiB)), peakMiB: stats(samples[v].map((s) => s.peakMiB)) },
  ]),
) as Record<Variant, Record<keyof Sample, ReturnType<typeof stats>>>;
const ratio = (k: keyof Sample) => summary.compiled[k].median / summary.source[k].median;
const result = { rounds, when: new Date().toISOString(), node: process.version, summary, ratios: { startMs: ratio('startMs'), rssMiB: ratio('rssMiB'), peakMiB: ratio('peakMiB') }, samples };
writeFileSync(path.join(root, 'bench/results/worker-start.json'), `${JSON.stringify(result, null, 2)}\n`);
const f = (s: { min: number; median: number; max: number }, d = 0) => `${s.min.toFixed(d)} / **${s.median.toFixed(d)}** / ${s.max.toFixed(d)}`;
const md = [
  `# Worker start: source vs compiled (${rounds} interleaved rounds, ${result.when.slice(0, 10)}, Node ${process.version})`,
  '',
  'min / **median** / max; `npm run bench:worker-start`',
  '',
  '| worker | spawn → polling (ms) | RSS when polling (MiB) | peak RSS (MiB) |',
  '|---|---|---|---|',
  `| source: \`node --import tsx worker/main.ts\` | ${f(summary.source.startMs)} | ${f(summary.source.rssMiB)} | ${f(summary.source.peakMiB)} |`,
  `| compiled: \`node dist/worker/main.js\` | ${f(summary.compiled.startMs)} | ${f(summary.compiled.rssMiB)} | ${f(summary.compiled.peakMiB)} |`,
  `| ratio compiled / source (medians) | ${result.ratios.startMs.toFixed(2)} | ${result.ratios.rssMiB.toFixed(2)} | ${result.ratios.peakMiB.toFixed(2)} |`,
  '',
].join('\n');
writeFileSync(path.join(root, 'bench/results/worker-start.md'), md);
console.log(md);
