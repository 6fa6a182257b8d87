// The conversation every variant of `npm run bench` has with the stand-in: the user asks
// "run N steps"; the model reads step-1-of-N.txt, whose text tells it to read the next
// file, and so on; after the Nth read it answers in text. A step is one model call, so a
// turn of N steps makes N model calls and N − 1 read_file calls, whoever drives it.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { ScenarioInput } from '../../standin/scenario';

export const BENCH_MODEL = 'claude-sonnet-4-6';
export const turnText = (steps: number, tag: string) => `run ${steps} steps (${tag})`;
const marker = (k: number, n: number) => `<bench step ${k} of ${n}>`;
const file = (k: number, n: number) => `step-${k}-of-${n}.txt`;
export const FINAL_TEXT = 'All steps done.';

/** The files a turn of each step count reads. */
export async function writeStepFiles(workspace: string, stepCounts: readonly number[]): Promise<void> {
  for (const n of new Set(stepCounts)) {
    for (let k = 1; k < n; k++) await fs.writeFile(path.join(workspace, file(k, n)), `${marker(k, n)}\nRead the next file.\n`);
  }
}

/**
 * Rules for every step count used. Long enough text that streaming it is a real stream
 * (several deltas) rather than one event; the same reply for the streaming and the
 * non-streaming peers.
 */
export function benchScenario(stepCounts: readonly number[], delayMs = 0): ScenarioInput {
  const rules: ScenarioInput['rules'] = [];
  for (const n of new Set(stepCounts)) {
    const first = n === 1 ? { type: 'text' as const, text: FINAL_TEXT } : { type: 'tool_use' as const, name: 'read_file', input: { path: file(1, n) } };
    rules.push({ name: `start ${n}`, match: { hasToolResults: false, lastUserContains: `run ${n} steps` }, reply: { content: [{ type: 'text', text: `I will take ${n} steps, reading one file each time.` }, first], delayMs, chunkSize: 16 } });
    for (let k = 1; k < n; k++) {
      const next = k + 1 === n ? { type: 'text' as const, text: FINAL_TEXT } : { type: 'tool_use' as const, name: 'read_file', input: { path: file(k + 1, n) } };
      rules.push({ name: `step ${k + 1} of ${n}`, match: { hasToolResults: true, lastUserContains: marker(k, n) }, reply: { content: [{ type: 'text', text: `Step ${k} read; going on.` }, next], delayMs, chunkSize: 16 } });
    }
  }
  return { name: 'bench', rules };
}
