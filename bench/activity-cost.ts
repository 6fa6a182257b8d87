// What one model call costs the worker's main thread, Keel's activity against the floor's, with
// nothing else running: `npx tsx bench/activity-cost.ts [sessions=30] [rounds=8]`.
// The bench's CPU per step moves by ±0.1× between runs (docs/performance.md, Method); this
// measures one piece of it tightly. Each mode runs `sessions` conversations of the bench's
// script (bench/suite/script.ts: 10 model calls a conversation) against the stand-in, which
// runs in a process of its own, so this process's CPU (process.cpuUsage: user and system) is
// the activity's alone. Modes, alternating in order round by round:
//   floor        the floor's `floorModel` (bench/floor/activities.ts): one non-streamed call,
//                the turn's messages inline
//   keel         Keel's `callModel` as a session makes it: streamed, the conversation by
//                reference (head + the messages since, stored by the call: a segment a step)
//   keel-inline  Keel's `callModel` with the same messages inline: no conversation store
// Each call runs in the SDK's MockActivityEnvironment (no Temporal server). Keel's calls do not
// publish deltas (no workflow to publish to). Writes bench/results/activity-cost.json.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type Anthropic from '@anthropic-ai/sdk';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createModelActivities, type ModelCallInput, type ModelCallResult } from '../activities/llm';
import { builtinTools, modelToolSpec } from '../activities/tools/definitions';
import { createFloorActivities, type FloorModelInput } from './floor/activities';
import { standinProcess } from './standin-process';
import { benchScenario, BENCH_MODEL, stepFileText, turnText } from './suite/script';
import { spread } from './suite/stats';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const sessions = Number(process.argv[2] ?? 30);
const rounds = Number(process.argv[3] ?? 8);
const STEPS = 10;

const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'keel-activity-cost-'));
const standin = await standinProcess(benchScenario([STEPS]));
const url = standin.url;

const env = { ...process.env, ANTHROPIC_API_KEY: 'sk-ant-bench', ANTHROPIC_BASE_URL: url };
const keel = createModelActivities({ env });
const floor = createFloorActivities(env);
/** One activity call in the SDK's mock environment (its context: heartbeats, cancellation, info). */
const keelCall = (input: ModelCallInput) => new MockActivityEnvironment().run<[ModelCallInput], ModelCallResult, (i: ModelCallInput) => Promise<ModelCallResult>>((i) => keel.callModel(i), input);
type FloorReply = Awaited<ReturnType<typeof floor.floorModel>>;
const floorCall = (input: FloorModelInput) => new MockActivityEnvironment().run<[FloorModelInput], FloorReply, (i: FloorModelInput) => Promise<FloorReply>>((i) => floor.floorModel(i), input);
const tools = builtinTools.map(modelToolSpec) as unknown as Anthropic.Tool[];
const store = path.join(dir, 'store');
let conversations = 0;

const toolUseOf = (content: Anthropic.ContentBlock[]) => content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
const afterToolUse = (content: Anthropic.ContentBlock[], use: Anthropic.ToolUseBlock, k: number): Anthropic.MessageParam[] => [
  { role: 'assistant', content },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: stepFileText(k, STEPS) }] },
];

/** One conversation through Keel's activity; `inline`: no store. Returns the calls made. */
async function keelConversation(inline: boolean): Promise<number> {
  const tag = `keel ${conversations++}`;
  let head: string | null = null;
  let lastInputTokens: number | undefined;
  let append: Anthropic.MessageParam[] = [{ role: 'user', content: turnText(STEPS, tag) }];
  const all: Anthropic.MessageParam[] = [];
  for (let k = 1; ; k++) {
    all.push(...append);
    const input: ModelCallInput = {
      callId: `${tag}-${k}`,
      model: BENCH_MODEL,
      maxTokens: 4096,
      tools,
      serverRetries: 'timeouts_only',
      publish: false,
      // As the turn runner passes it (workflows/turn-runner.ts): the last response's input tokens for the head.
      conversation: inline ? { kind: 'inline', messages: [...all] } : { kind: 'ref', store, head, append, ...(lastInputTokens !== undefined ? { lastInputTokens } : {}) },
    };
    const result = await keelCall(input);
    head = result.conversationHead ?? null;
    const u = result.usage;
    lastInputTokens = u.input_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);
    const use = toolUseOf(result.message.content);
    if (!use) return k;
    append = afterToolUse(result.message.content, use, k);
  }
}

async function floorConversation(): Promise<number> {
  const messages: Anthropic.MessageParam[] = [{ role: 'user', content: turnText(STEPS, `floor ${conversations++}`) }];
  for (let k = 1; ; k++) {
    const reply = await floorCall({ model: BENCH_MODEL, messages: [...messages], tools });
    const use = toolUseOf(reply.content);
    if (!use) return k;
    messages.push(...afterToolUse(reply.content, use, k));
  }
}

const modes: Record<string, () => Promise<number>> = {
  floor: floorConversation,
  keel: () => keelConversation(false),
  'keel-inline': () => keelConversation(true),
};
type Row = { mode: string; round: number; calls: number; userMsPerCall: number; systemMsPerCall: number };
const results: Row[] = [];
try {
  // Warm: the JIT's first work, the store's first directories.
  for (const run of Object.values(modes)) for (let i = 0; i < 5; i++) await run();
  for (let round = 1; round <= rounds; round++) {
    const order = round % 2 === 1 ? Object.entries(modes) : Object.entries(modes).reverse();
    for (const [mode, run] of order) {
      const before = process.cpuUsage();
      let calls = 0;
      for (let i = 0; i < sessions; i++) calls += await run();
      const used = process.cpuUsage(before);
      results.push({ mode, round, calls, userMsPerCall: used.user / 1000 / calls, systemMsPerCall: used.system / 1000 / calls });
    }
  }
} finally {
  await standin.stop();
  await fs.rm(dir, { recursive: true, force: true });
}

const summary: Record<string, { cpuMsPerCall: ReturnType<typeof spread>; userMsPerCall: number; systemMsPerCall: number }> = {};
for (const mode of Object.keys(modes)) {
  const mine = results.filter((r) => r.mode === mode);
  const cpu = spread(mine.map((r) => r.userMsPerCall + r.systemMsPerCall));
  summary[mode] = { cpuMsPerCall: cpu, userMsPerCall: spread(mine.map((r) => r.userMsPerCall)).median, systemMsPerCall: spread(mine.map((r) => r.systemMsPerCall)).median };
  console.log(
    `${mode.padEnd(12)} ${cpu.min.toFixed(3)} / ${cpu.median.toFixed(3)} / ${cpu.max.toFixed(3)} ms CPU per call (min / median / max over ${rounds} rounds of ${sessions * STEPS} calls; median user ${summary[mode].userMsPerCall.toFixed(3)}, system ${summary[mode].systemMsPerCall.toFixed(3)})`,
  );
}
await fs.writeFile(path.join(root, 'bench/results/activity-cost.json'), `${JSON.stringify({ when: new Date().toISOString(), sessions, rounds, summary, results }, null, 2)}\n`);
