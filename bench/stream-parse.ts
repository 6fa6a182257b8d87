// What streaming a model call costs the caller's CPU against not streaming it, with the real
// `@anthropic-ai/sdk` and the bench's own replies (bench/suite/script.ts: a sentence, then a
// tool call, in 16-character deltas): `npx tsx bench/stream-parse.ts [calls=400] [rounds=3]`.
// The stand-in runs in a process of its own, so this process's CPU (process.cpuUsage) is the
// client's alone: building the request, HTTP, parsing the SSE events or the one JSON body.
// The floor's model call is not streamed and Keel's is (docs/performance.md): this is that
// difference, per call. Writes bench/results/stream-parse.json.
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Anthropic from '@anthropic-ai/sdk';
import { standinProcess } from './standin-process';
import { benchScenario, BENCH_MODEL } from './suite/script';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const calls = Number(process.argv[2] ?? 400);
const rounds = Number(process.argv[3] ?? 3);

const standin = await standinProcess(benchScenario([10]));
const url = standin.url;

const client = new Anthropic({ apiKey: 'sk-ant-bench', baseURL: url, maxRetries: 0 });
const body = { model: BENCH_MODEL, max_tokens: 1024, messages: [{ role: 'user' as const, content: 'run 10 steps (stream-parse)' }] };
const modes = {
  streamed: async () => {
    let events = 0;
    for await (const _ of await client.messages.create({ ...body, stream: true })) events++;
    return events;
  },
  'not streamed': async () => (await client.messages.create(body)).content.length,
};

const results: Array<{ mode: string; round: number; cpuMsPerCall: number; eventsPerCall: number }> = [];
try {
  for (let round = 1; round <= rounds; round++) {
    for (const [mode, call] of Object.entries(modes)) {
      for (let i = 0; i < 50; i++) await call(); // warm: the JIT's first work is not the call's
      const before = process.cpuUsage();
      let events = 0;
      for (let i = 0; i < calls; i++) events += await call();
      const used = process.cpuUsage(before);
      results.push({ mode, round, cpuMsPerCall: (used.user + used.system) / 1000 / calls, eventsPerCall: events / calls });
    }
  }
} finally {
  await standin.stop();
}

for (const mode of Object.keys(modes)) {
  const mine = results.filter((r) => r.mode === mode).map((r) => r.cpuMsPerCall).sort((a, b) => a - b);
  console.log(`${mode.padEnd(13)} ${mine.map((ms) => ms.toFixed(3)).join(' / ')} ms CPU per call (min / … / max over ${rounds} rounds of ${calls})`);
}
await fs.writeFile(path.join(root, 'bench/results/stream-parse.json'), `${JSON.stringify({ when: new Date().toISOString(), calls, rounds, results }, null, 2)}\n`);
