// `npm run chaos [goals=25] [seed] [patience-minutes=15]`: the chaos suite of test/chaos/chaos.ts at full size
// (batches of 5 goals, 2 worker kill -9 per batch, 3 Temporal server kill -9, 30 % model
// faults); writes bench/results/chaos.json. Without a seed it draws a new one each run (CI's
// short version keeps a fixed one) and prints it, first and with a failure, to replay.
// The verdict is PASS (exit 0), FAIL (exit 1: a goal not met, a message lost, a tool call
// without one result, a side effect repeated) or INCONCLUSIVE (exit 2: no wrong answer, but
// something did not answer within the patience: the machine was too slow to judge).
// Ctrl-C or SIGTERM stops the run and every process it started.
import { randomInt } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runChaos } from '../test/chaos/chaos';
import { stopOnSignals } from '../test/chaos/stop-on-signals';

const goals = Number(process.argv[2] ?? 25);
const seed = process.argv[3] !== undefined ? Number(process.argv[3]) : randomInt(1, 1_000_000);
const patienceMs = process.argv[4] !== undefined ? Number(process.argv[4]) * 60_000 : undefined;
console.log(`chaos: ${goals} goals, seed ${seed}`);
const stop = stopOnSignals('chaos');
try {
  const result = await runChaos({ goals, batch: 5, workerKillsPerBatch: 2, serverKills: 3, faultRate: 0.3, seed, log: console.log, signal: stop.signal, ...(patienceMs ? { patienceMs } : {}) }).catch((error: unknown) => {
    // Stopped by Ctrl-C or SIGTERM: what it started is stopped, and there is no verdict.
    if (stop.signal.aborted) return null;
    throw error;
  });
  if (result === null) console.error('chaos: stopped before a verdict');
  else {
    const file = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results', 'chaos.json');
    await fs.mkdir(path.dirname(file), { recursive: true });
    await fs.writeFile(file, `${JSON.stringify({ command: `npm run chaos -- ${goals} ${seed}`, at: new Date().toISOString(), ...result }, null, 2)}\n`);
    console.log(JSON.stringify(result, null, 2));
    if (result.verdict === 'PASS') console.log(`chaos: PASS (seed ${seed}; slow machine: ${result.slowGoals} goals answered over 30 s after their batch's chaos)`);
    else if (result.verdict === 'FAIL') console.log(`chaos: FAIL with seed ${seed}: ${result.failedChecks.join('; ')}: replay with npm run chaos -- ${goals} ${seed}`);
    else console.log(`chaos: INCONCLUSIVE with seed ${seed}: no wrong answer, but the machine was too slow to judge (${result.outwaited.join('; ')}): run again on a quieter machine or with more patience (npm run chaos -- ${goals} ${seed} 30)`);
    process.exitCode = result.verdict === 'PASS' ? 0 : result.verdict === 'FAIL' ? 1 : 2;
  }
} finally {
  stop.dispose();
}
