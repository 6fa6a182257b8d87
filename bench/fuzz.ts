// `npm run fuzz [messages=10000] [seed]`: the fuzz suite of test/chaos/fuzz.ts against
// its own Temporal dev server (in memory) and a Keel worker; writes bench/results/fuzz.json.
// Without a seed it draws a new one each run (CI's short version keeps a fixed one) and
// prints it, first and with a failure, to replay.
import { randomInt } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@temporalio/client';
import { ClosableConnection } from '../client/grpc-retry';
import { NativeConnection } from '@temporalio/worker';
import { runFuzz } from '../test/chaos/fuzz';
import { startDevServer } from '../worker/dev-server';

const messages = Number(process.argv[2] ?? 10_000);
const seed = process.argv[3] !== undefined ? Number(process.argv[3]) : randomInt(1, 1_000_000);
const server = await startDevServer({ port: 0, readyTimeoutMs: 120_000 });
const native = await NativeConnection.connect({ address: server.address });
const connection = await ClosableConnection.connect({ address: server.address });
const client = new Client({ connection, namespace: server.namespace });
try {
  console.log(`fuzz: ${messages} messages, seed ${seed}, Temporal ${server.version}`);
  const result = await runFuzz({ client, connection: native, namespace: server.namespace, messages, seed, log: console.log });
  const file = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results', 'fuzz.json');
  await fs.mkdir(path.dirname(file), { recursive: true });
  await fs.writeFile(file, `${JSON.stringify({ command: `npm run fuzz -- ${messages} ${seed}`, at: new Date().toISOString(), ...result }, null, 2)}\n`);
  console.log(JSON.stringify(result, null, 2));
  console.log(result.pass ? `fuzz: PASS (seed ${seed})` : `fuzz: FAIL with seed ${seed}: replay with npm run fuzz -- ${messages} ${seed}`);
  process.exitCode = result.pass ? 0 : 1;
} finally {
  await connection.close();
  await native.close();
  await server.stop();
}
