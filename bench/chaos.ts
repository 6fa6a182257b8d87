// `npm run chaos [goals=25] [seed]`: the chaos suite of test/chaos/chaos.ts at full size
// (batches of 5 goals, 2 worker kill -9 per batch, 3 Temporal server kill -9, 30 % model
// faults); writes bench/results/chaos.json. Without a seed it draws a new one each run (CI's
// short version keeps a fixed one) and prints it, first and with a failure, to replay.
import { randomInt } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runChaos } from '../test/chaos/chaos';

const goals = Number(process.argv[2] ?? 25);
const seed = process.argv[3] !== undefined ? Number(process.argv[3]) : randomInt(1, 1_000_000);
console.log(`chaos: ${goals} goals, seed ${seed}`);
const result = await runChaos({ goals, batch: 5, workerKillsPerBatch: 2, serverKills: 3, faultRate: 0.3, seed, log: console.log });
const file = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results', 'chaos.json');
await fs.mkdir(path.dirname(file), { recursive: true });
await fs.writeFile(file, `${JSON.stringify({ command: `npm run chaos -- ${goals} ${seed}`, at: new Date().toISOString(), ...result }, null, 2)}\n`);
console.log(JSON.stringify(result, null, 2));
console.log(result.pass ? `chaos: PASS (seed ${seed})` : `chaos: FAIL with seed ${seed}: replay with npm run chaos -- ${goals} ${seed}`);
process.exitCode = result.pass ? 0 : 1;
