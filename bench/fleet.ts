// `npm run fleet -- [--workers 3] [--goals 100] [--sessions 30] [--turns 3] [--seed N]
//   [--window 600] [--kill-every 30] [--away 300] [--server-restarts 3] [--pg-stop 20]
//   [--pg-blip 1] [--quiet 900] [--keep]` (durations in seconds; --keep keeps the run's directory, as a failed run's always is): a Keel fleet under faults
// (bench/fleet/run.ts). Writes bench/results/fleet-<seed>.{json,md}; exits 0 only when every
// goal was met, every session's turns were answered, 0 messages were lost, 0 side effects ran
// twice, 0 runs were stuck and 0 needed a human. Without --seed it draws one and prints it.
// Ctrl-C or SIGTERM stops the run and every process it started.
import { randomInt } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { stop as stopEsbuild } from 'esbuild';
import { compiledCli } from '../test/fixtures/compiled-cli';
import { stopOnSignals } from '../test/chaos/stop-on-signals';
import { fleetMarkdown } from './fleet/report';
import { runFleet } from './fleet/run';

const { values } = parseArgs({
  options: {
    workers: { type: 'string', default: '3' },
    goals: { type: 'string', default: '100' },
    sessions: { type: 'string', default: '30' },
    turns: { type: 'string', default: '3' },
    seed: { type: 'string' },
    window: { type: 'string', default: '600' },
    'kill-every': { type: 'string', default: '30' },
    away: { type: 'string', default: '300' },
    'server-restarts': { type: 'string', default: '3' },
    'pg-stop': { type: 'string', default: '20' },
    'pg-blip': { type: 'string', default: '1' },
    quiet: { type: 'string', default: '900' },
    keep: { type: 'boolean', default: false },
  },
});
const num = (name: keyof typeof values) => {
  const n = Number(values[name]);
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${name}: a number, not ${String(values[name])}`);
  return n;
};
const seed = values.seed !== undefined ? num('seed') : randomInt(1, 1_000_000);
const options = {
  workers: num('workers'),
  goals: num('goals'),
  sessions: num('sessions'),
  turns: num('turns'),
  seed,
  windowMs: num('window') * 1000,
  killEveryMs: num('kill-every') * 1000,
  restartDelayMs: [1_000, 5_000] as [number, number],
  awayMs: num('away') * 1000,
  serverRestarts: num('server-restarts'),
  pgStopMs: num('pg-stop') * 1000,
  pgBlipMs: num('pg-blip') * 1000,
  quietMs: num('quiet') * 1000,
};
const command = `npm run fleet -- ${Object.entries(values).filter(([k, v]) => k !== 'seed' && k !== 'keep' && v !== undefined).map(([k, v]) => `--${k} ${String(v)}`).join(' ')} --seed ${seed}`;
console.log(`fleet: seed ${seed} (${command})`);
const cli = await compiledCli(process.pid);
await stopEsbuild();
const stop = stopOnSignals('fleet');
try {
  const at = new Date().toISOString();
  const result = await runFleet({ ...options, keep: values.keep, cli, log: (l) => console.log(l), signal: stop.signal }).catch((error: unknown) => {
    if (stop.signal.aborted) return null;
    throw error;
  });
  if (result === null) console.error('fleet: stopped before a verdict');
  else {
    const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results');
    await fs.mkdir(dir, { recursive: true });
    await fs.writeFile(path.join(dir, `fleet-${seed}.json`), `${JSON.stringify({ command, at, options, ...result }, null, 2)}\n`);
    const md = fleetMarkdown(command, options, result, at);
    await fs.writeFile(path.join(dir, `fleet-${seed}.md`), md);
    console.log(md);
    console.log(result.pass ? `fleet: PASS (seed ${seed})` : `fleet: FAIL with seed ${seed}: ${result.failedChecks.join('; ')}`);
    process.exitCode = result.pass ? 0 : 1;
  }
} finally {
  stop.dispose();
}
// Whatever a client left open (a gRPC channel's retry timer) must not hold the finished run.
process.exit(process.exitCode ?? 0);
