// What sending a long conversation costs the caller's CPU: the Anthropic SDK serialising the
// whole request at every call, against the request sent from the conversation's kept bytes
// (activities/request-bytes.ts, as a warm conversation past 256 KiB does). The real
// `@anthropic-ai/sdk`, the stand-in in a process of its own (its CPU is not counted), the
// conversation of the bench's `long` scenario from turn `turns` (a 20 KB tool result a turn,
// ~2 MB at 100), one more turn appended before each call as a session does, and the request
// with its cache breakpoints as Keel builds it. Modes alternate round by round:
//   npx tsx bench/request-bytes.ts [turns=100] [calls=30] [rounds=6]
// Writes bench/results/request-bytes.json.
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Anthropic from '@anthropic-ai/sdk';
import { withPromptCaching } from '../activities/llm-cache';
import { MessageBytes, requestParts, streamedBody } from '../activities/request-bytes';
import { standinProcess } from './standin-process';
import { BENCH_MODEL } from './suite/script';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const turns = Number(process.argv[2] ?? 100);
const calls = Number(process.argv[3] ?? 30);
const rounds = Number(process.argv[4] ?? 6);

const standin = await standinProcess({ rules: [{ match: {}, reply: { content: [{ type: 'text', text: 'ok' }] } }] });
const client = new Anthropic({ apiKey: 'sk-ant-bench', baseURL: standin.url, maxRetries: 0 });
const tools: Anthropic.Tool[] = [{ name: 'read_file', description: 'Reads a file.', input_schema: { type: 'object', properties: { path: { type: 'string' } } } }];

/** One turn of the `long` scenario: a tool call and its 20 KB result. */
const turn = (n: number): Anthropic.MessageParam[] => [
  { role: 'assistant', content: [{ type: 'text', text: `Reading file ${n}.` }, { type: 'tool_use', id: `toolu_${n}`, name: 'read_file', input: { path: `f${n}.txt` } }] },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: `toolu_${n}`, content: `${n}: ${'row of the file\n'.repeat(1_300)}` }] },
];

// The conversation as a session holds it: a warm array of messages and, past 256 KiB, their
// kept bytes. Each block of calls starts again from turn `turns`.
let start: Anthropic.MessageParam[] = [{ role: 'user', content: 'Read every file.' }];
for (let n = 0; n < turns; n++) start = start.concat(turn(n));
const startKept = MessageBytes.of(start);
let messages = start;
let kept = startKept;
let next = turns;

type Mode = { send(body: Anthropic.MessageCreateParamsStreaming): Promise<AsyncIterable<unknown>>; joined(added: Anthropic.MessageParam[]): void };
const modes: Record<string, Mode> = {
  // As before: the warm conversation measured its new messages; the SDK serialises the request.
  'the SDK serialises': {
    joined: (added) => void added.reduce((n, m) => n + JSON.stringify(m).length, 0),
    send: (body) => client.messages.create(body),
  },
  'from kept bytes': {
    joined: (added) => void (kept = kept.append(added)),
    send: (body) => {
      const sent = streamedBody(requestParts(body as unknown as Record<string, unknown>, messages, kept));
      return client.messages.create(body, { body: sent.body, headers: sent.headers });
    },
  },
};

async function call(mode: Mode): Promise<void> {
  // A session goes on: the turn's messages join the warm conversation.
  const added = turn(next++);
  messages = messages.concat(added);
  mode.joined(added);
  const cached = withPromptCaching({ system: 'You read files.', tools, messages });
  const body: Anthropic.MessageCreateParamsStreaming = { model: BENCH_MODEL, max_tokens: 1024, messages: cached.messages, stream: true, system: cached.system!, tools: cached.tools! };
  for await (const _ of await mode.send(body)) {
    // drained: the call is whole
  }
}

const results: Array<{ mode: string; round: number; cpuMsPerCall: number }> = [];
let requestBytes = 0;
try {
  for (let round = 1; round <= rounds; round++) {
    for (const [name, mode] of Object.entries(modes)) {
      messages = start;
      kept = startKept;
      // Warm: the JIT's first work is not the call's (and the kept bytes leave the shared start).
      for (let i = 0; i < 3; i++) await call(mode);
      const before = process.cpuUsage();
      for (let i = 0; i < calls; i++) await call(mode);
      const used = process.cpuUsage(before);
      results.push({ mode: name, round, cpuMsPerCall: (used.user + used.system) / 1000 / calls });
      requestBytes = Math.max(requestBytes, Buffer.byteLength(JSON.stringify(messages)));
    }
  }
} finally {
  await standin.stop();
}

for (const mode of Object.keys(modes)) {
  const mine = results.filter((r) => r.mode === mode).map((r) => r.cpuMsPerCall).sort((a, b) => a - b);
  console.log(`${mode.padEnd(19)} ${mine.map((ms) => ms.toFixed(2)).join(' / ')} ms CPU per call (min / … / max over ${rounds} rounds of ${calls}), median ${mine[Math.floor(mine.length / 2)]!.toFixed(2)}`);
}
console.log(`the largest request: ~${(requestBytes / 1024 / 1024).toFixed(2)} MiB of messages`);
await fs.writeFile(path.join(root, 'bench/results/request-bytes.json'), `${JSON.stringify({ when: new Date().toISOString(), turns, calls, rounds, requestBytes, results }, null, 2)}\n`);
