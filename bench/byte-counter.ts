// What counting a streamed response's bytes costs the model call (activities/llm-client.ts:
// each chunk told to the call's idle timer, as the SDK skips the stream's pings): the real
// shared client reading through its counting stream, against the same calls not counted, and
// against the `TransformStream` piped in between that it replaced. The real `@anthropic-ai/sdk`,
// the stand-in in a process of its own (its CPU is not counted), an answer of `chunks` text
// deltas 1 ms apart (each its own chunk, as a model's arrive). Modes alternate round by round:
//   npx tsx bench/byte-counter.ts [chunks=60] [calls=50] [rounds=6]
// Writes bench/results/byte-counter.json.
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Anthropic from '@anthropic-ai/sdk';
import { anthropicClient, countingBytes } from '../activities/llm-client';
import { standinProcess } from './standin-process';
import { BENCH_MODEL } from './suite/script';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const chunks = Number(process.argv[2] ?? 60);
const calls = Number(process.argv[3] ?? 50);
const rounds = Number(process.argv[4] ?? 6);

const chunkSize = 8;
const standin = await standinProcess({ rules: [{ match: {}, reply: { content: [{ type: 'text', text: 'a word '.repeat((chunks * chunkSize) / 7) }], chunkSize, delayMs: 1 } }] });
const KEY = 'sk-ant-bench';
let counted = 0;

/** The counter as it was: the body piped through a `TransformStream` that counts each chunk. */
const transformFetch: typeof fetch = async (input, init) => {
  const response = await fetch(input, init);
  if (!response.body) return response;
  const counter = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      counted += chunk.byteLength;
      controller.enqueue(chunk);
    },
  });
  return new Response(response.body.pipeThrough(counter), { status: response.status, statusText: response.statusText, headers: response.headers });
};
const piped = new Anthropic({ apiKey: KEY, baseURL: standin.url, maxRetries: 0, fetch: transformFetch });
const shared = anthropicClient(KEY, standin.url);

const body: Anthropic.MessageCreateParamsStreaming = { model: BENCH_MODEL, max_tokens: 16_000, stream: true, messages: [{ role: 'user', content: 'Say something long.' }] };
const drain = async (client: Anthropic) => {
  for await (const _ of await client.messages.create(body)) {
    // drained: the call is whole
  }
};
const modes: Record<string, () => Promise<void>> = {
  'not counted': () => drain(shared),
  'counted (as now)': () => countingBytes((n) => (counted += n), () => drain(shared)),
  'TransformStream (before)': () => drain(piped),
};

const results: Array<{ mode: string; round: number; cpuMsPerCall: number }> = [];
try {
  for (let round = 1; round <= rounds; round++) {
    for (const [mode, call] of Object.entries(modes)) {
      for (let i = 0; i < 5; i++) await call();
      const before = process.cpuUsage();
      for (let i = 0; i < calls; i++) await call();
      const used = process.cpuUsage(before);
      results.push({ mode, round, cpuMsPerCall: (used.user + used.system) / 1000 / calls });
    }
  }
} finally {
  await standin.stop();
}

const median = (mode: string) => {
  const mine = results.filter((r) => r.mode === mode).map((r) => r.cpuMsPerCall).sort((a, b) => a - b);
  return { mine, median: mine[Math.floor(mine.length / 2)]! };
};
const bare = median('not counted').median;
for (const mode of Object.keys(modes)) {
  const { mine, median: m } = median(mode);
  console.log(`${mode.padEnd(25)} ${mine.map((ms) => ms.toFixed(3)).join(' / ')} ms CPU a call (min / … / max over ${rounds} rounds of ${calls}), median ${m.toFixed(3)}, over not counted ${(m - bare).toFixed(3)}`);
}
console.log(`bytes counted a call: ${Math.round(counted / (2 * rounds * (calls + 5)))}`);
await fs.writeFile(path.join(root, 'bench/results/byte-counter.json'), `${JSON.stringify({ when: new Date().toISOString(), chunks, calls, rounds, results }, null, 2)}\n`);
