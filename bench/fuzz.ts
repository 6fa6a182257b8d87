// `npm run fuzz [messages=10000] [seed] [patience-minutes=15]`: the fuzz suite of test/chaos/fuzz.ts
// against its own Temporal dev server (in memory) and a Keel worker; writes bench/results/fuzz.json.
// Without a seed it draws a new one each run (CI's short version keeps a fixed one) and
// prints it, first and with a failure, to replay.
// The verdict is PASS (exit 0), FAIL (exit 1: a wrong answer) or INCONCLUSIVE (exit 2: no
// wrong answer, but something did not answer within the patience: the machine was too slow
// to judge). Ctrl-C or SIGTERM stops the run and everything it started.
import { randomInt } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@temporalio/client';
import { ClosableConnection } from '../client/grpc-retry';
import { NativeConnection } from '@temporalio/worker';
import { runFuzz } from '../test/chaos/fuzz';
import { stopOnSignals } from '../test/chaos/stop-on-signals';
import { startDevServer } from '../worker/dev-server';

const messages = Number(process.argv[2] ?? 10_000);
const seed = process.argv[3] !== undefined ? Number(process.argv[3]) : randomInt(1, 1_000_000);
const patienceMs = process.argv[4] !== undefined ? Number(process.argv[4]) * 60_000 : undefined;
const stop = stopOnSignals('fuzz');
// However long a busy machine takes to bring the server up (its start is not what is judged).
const server = await startDevServer({ port: 0, readyTimeoutMs: 15 * 60_000 });
try {
  const native = await NativeConnection.connect({ address: server.address });
  const connection = await ClosableConnection.connect({ address: server.address });
  const client = new Client({ connection, namespace: server.namespace });
  try {
    console.log(`fuzz: ${messages} messages, seed ${seed}, Temporal ${server.version}`);
    const result = await runFuzz({ client, connection: native, namespace: server.namespace, messages, seed, log: console.log, signal: stop.signal, ...(patienceMs ? { patienceMs } : {}) }).catch((error: unknown) => {
      // Stopped by Ctrl-C or SIGTERM: what it started is stopped, and there is no verdict.
      if (stop.signal.aborted) return null;
      throw error;
    });
    if (result === null) console.error('fuzz: stopped before a verdict');
    else {
      const file = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results', 'fuzz.json');
      await fs.mkdir(path.dirname(file), { recursive: true });
      await fs.writeFile(file, `${JSON.stringify({ command: `npm run fuzz -- ${messages} ${seed}`, at: new Date().toISOString(), ...result }, null, 2)}\n`);
      console.log(JSON.stringify(result, null, 2));
      const busy = `${result.slowAnswers} answers took over 30 s, ${result.workflowTaskTimeouts} workflow tasks timed out, ${result.slowTaskRetries} were retried after the deadlock detector`;
      if (result.verdict === 'PASS') console.log(`fuzz: PASS (seed ${seed}; slow machine: ${busy})`);
      else if (result.verdict === 'FAIL') console.log(`fuzz: FAIL with seed ${seed}: ${result.failedChecks.join('; ')}: replay with npm run fuzz -- ${messages} ${seed}`);
      else console.log(`fuzz: INCONCLUSIVE with seed ${seed}: no wrong answer, but the machine was too slow to judge (${result.outwaited.length} waits outlasted the patience; ${busy}): run again on a quieter machine or with more patience (npm run fuzz -- ${messages} ${seed} 30)`);
      process.exitCode = result.verdict === 'PASS' ? 0 : result.verdict === 'FAIL' ? 1 : 2;
    }
  } finally {
    await connection.close();
    await native.close();
  }
} finally {
  await server.stop();
  stop.dispose();
}
