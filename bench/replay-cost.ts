// The workflow code's CPU, measured tightly: replays the recorded session histories
// (test/histories/session) in this process, with no server, no activities and no model, so the
// CPU (process.cpuUsage) is the workflow thread's and the SDK's replay alone, the same work
// every time. `npx tsx bench/replay-cost.ts [--against FILE] [--copies 3] [--rounds 8]`.
// With `--against`, a second bundle (e.g. dist/workflow-bundle.js that `npm run build` wrote in
// a worktree of another commit) replays the same histories, alternating with this checkout's
// round by round: a change to workflow code shows here to a few percent, where the bench's
// CPU per step moves ±0.1× between runs (docs/performance.md, Method) and a CPU profile
// over-attributes to small hot functions.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { keelWorkflowSinks } from '../worker/telemetry';
import { KEEL_BUNDLE_OPTIONS } from '../worker/worker';
import { spread } from './suite/stats';

const { values } = parseArgs({
  options: { against: { type: 'string' }, copies: { type: 'string', default: '3' }, rounds: { type: 'string', default: '8' } },
});
const copies = Number(values.copies);
const rounds = Number(values.rounds);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

Runtime.install({ logger: new DefaultLogger('ERROR') });
const quiet = () => {};
const bundles: Record<string, { code: string }> = {
  'this checkout': await bundleWorkflowCode({ ...KEEL_BUNDLE_OPTIONS, logger: { log: quiet, trace: quiet, debug: quiet, info: quiet, warn: quiet, error: console.error } }),
};
if (values.against) bundles[path.basename(values.against)] = { code: readFileSync(values.against, 'utf8') };

type History = { events: Array<{ workflowExecutionStartedEventAttributes?: { workflowId?: string } }> };
const dir = path.join(root, 'test/histories/session');
const histories = readdirSync(dir)
  .filter((file) => file.endsWith('.json'))
  .map((file) => JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as History);
const events = histories.reduce((sum, h) => sum + h.events.length, 0) * copies;

let replays = 0;
/** CPU ms to replay every history `copies` times with one replay worker. */
async function replayAll(workflowBundle: { code: string }): Promise<number> {
  const input = Array.from({ length: copies }, () => histories.map((history) => ({ workflowId: history.events[0]?.workflowExecutionStartedEventAttributes?.workflowId ?? 'session', history: history as never }))).flat();
  const before = process.cpuUsage();
  for await (const result of Worker.runReplayHistories({ workflowBundle, sinks: keelWorkflowSinks(null), replayName: `replay-cost-${replays++}` }, input)) {
    if (result.error) throw new Error(`replay failed for ${result.workflowId}: ${String(result.error)}`);
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
}

const names = Object.keys(bundles);
const results: Record<string, number[]> = Object.fromEntries(names.map((name) => [name, []]));
for (const name of names) await replayAll(bundles[name]!); // warm: the JIT's first work
for (let round = 0; round < rounds; round++) {
  for (const name of round % 2 === 0 ? names : [...names].reverse()) results[name]!.push(await replayAll(bundles[name]!));
}
console.log(`${histories.length} recorded session histories × ${copies} (${events} events) a round, ${rounds} rounds:`);
for (const name of names) {
  const s = spread(results[name]!);
  console.log(`  ${name}: ${s.min.toFixed(0)} / ${s.median.toFixed(0)} / ${s.max.toFixed(0)} ms CPU (min / median / max), ${((s.median / events) * 1000).toFixed(1)} µs an event`);
}
