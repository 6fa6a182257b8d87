// The conversation every variant of `npm run bench` has with the stand-in: the user asks
// "run N steps"; the model reads step-1-of-N.txt, whose text tells it to read the next
// file, and so on; after the Nth read it answers in text. A step is one model call, so a
// turn of N steps makes N model calls and N − 1 read_file calls, whoever drives it.
import fs from 'node:fs/promises';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { COMPACTION_MARK } from '../../activities/conversation-compaction';
import type { ScenarioInput } from '../../standin/scenario';

export const BENCH_MODEL = 'claude-sonnet-4-6';
export const turnText = (steps: number, tag: string) => `run ${steps} steps (${tag})`;
const marker = (k: number, n: number) => `<bench step ${k} of ${n}>`;
const file = (k: number, n: number) => `step-${k}-of-${n}.txt`;
/** What step-k-of-n.txt holds: the marker the next step's rule looks for in the tool result. */
export const stepFileText = (k: number, n: number) => `${marker(k, n)}\nRead the next file.\n`;
export const FINAL_TEXT = 'All steps done.';

/** The files a turn of each step count reads. */
export async function writeStepFiles(workspace: string, stepCounts: readonly number[]): Promise<void> {
  for (const n of new Set(stepCounts)) {
    for (let k = 1; k < n; k++) await fs.writeFile(path.join(workspace, file(k, n)), stepFileText(k, n));
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

// The `cost` scenario: a session of `turns` turns; in turn t the model reads cost-t.txt (a
// tool result of 2–20 KB, sizes spread over the turns) and answers. Two model calls a turn.
export const costTurnText = (t: number, turns: number, tag: string) => `cost turn ${t}/${turns}: summarize cost-${t}.txt (${tag})`;
const costMarker = (t: number) => `<cost file ${t}>`;

/** 2 KB to 20 KB, the same for every run: 2 + (7·t mod 19) KB. */
export const costFileBytes = (t: number): number => (2 + ((7 * t) % 19)) * 1024;

export async function writeCostFiles(workspace: string, turns: number): Promise<void> {
  for (let t = 1; t <= turns; t++) {
    const lines: string[] = [costMarker(t)];
    let size = lines[0]!.length + 1;
    for (let i = 1; size < costFileBytes(t); i++) {
      // Varied text, as source or logs would be, so no two files share bytes by accident.
      const line = `${t}.${i} ${createHash('sha256').update(`${t}:${i}`).digest('base64')} value=${(t * 7919 + i * 104729) % 100000}`;
      lines.push(line);
      size += line.length + 1;
    }
    await fs.writeFile(path.join(workspace, `cost-${t}.txt`), `${lines.join('\n')}\n`);
  }
}

export function costScenario(turns: number): ScenarioInput {
  // A compacting session's summary call (activities/conversation-compaction.ts) first: it ends with the tool results too.
  const rules: ScenarioInput['rules'] = [
    { name: 'summary', match: { lastUserContains: COMPACTION_MARK }, reply: { content: [{ type: 'text', text: 'Earlier turns: the user had cost files read one per turn; each holds numbered values.' }] } },
  ];
  for (let t = 1; t <= turns; t++) {
    rules.push({
      name: `cost ${t} read`,
      match: { hasToolResults: false, lastUserContains: `cost turn ${t}/${turns}:` },
      reply: { content: [{ type: 'text', text: `I will read cost-${t}.txt and summarize it.` }, { type: 'tool_use', name: 'read_file', input: { path: `cost-${t}.txt` } }] },
    });
    rules.push({
      name: `cost ${t} answer`,
      match: { hasToolResults: true, lastUserContains: costMarker(t) },
      reply: { content: [{ type: 'text', text: `cost-${t}.txt holds ${costFileBytes(t) / 1024} KB of numbered values. ${FINAL_TEXT}` }] },
    });
  }
  return { name: 'bench-cost', rules };
}

// The `long` scenario with `--long-output-bytes N`: in turn t the model reads long-t.txt (N
// bytes, a different text each turn, as a real session reads) and answers; two model calls a
// turn. A compacting session's summary call is answered too (Keel compacts a long session).
export const longTurnText = (t: number, turns: number, tag: string) => `long turn ${t}/${turns}: read long-${t}.txt (${tag})`;
const longMarker = (t: number) => `<long file ${t}>`;

export async function writeLongFiles(workspace: string, turns: number, bytes: number): Promise<void> {
  for (let t = 1; t <= turns; t++) {
    const lines: string[] = [longMarker(t)];
    let size = lines[0]!.length + 1;
    for (let i = 1; size < bytes; i++) {
      const line = `${t}.${i} ${createHash('sha256').update(`long:${t}:${i}`).digest('base64')}`;
      lines.push(line);
      size += line.length + 1;
    }
    await fs.writeFile(path.join(workspace, `long-${t}.txt`), `${lines.join('\n')}\n`);
  }
}

export function longReadScenario(turns: number): ScenarioInput {
  const rules: ScenarioInput['rules'] = [
    { name: 'summary', match: { lastUserContains: COMPACTION_MARK }, reply: { content: [{ type: 'text', text: 'Earlier turns: the user had long files read one per turn.' }] } },
  ];
  for (let t = 1; t <= turns; t++) {
    rules.push({
      name: `long ${t} read`,
      match: { hasToolResults: false, lastUserContains: `long turn ${t}/${turns}:` },
      reply: { content: [{ type: 'text', text: `I will read long-${t}.txt.` }, { type: 'tool_use', name: 'read_file', input: { path: `long-${t}.txt` } }] },
    });
    rules.push({ name: `long ${t} answer`, match: { hasToolResults: true, lastUserContains: longMarker(t) }, reply: { content: [{ type: 'text', text: `Read long-${t}.txt. ${FINAL_TEXT}` }] } });
  }
  return { name: 'bench-long', rules };
}

// The `cost` scenario's goal: a planner proposes `tasks` independent tasks; each task agent
// reads two files (2–20 KB, as in the session) and finishes; the critic passes the goal.
const goalFile = (task: number, part: 'a' | 'b') => `goal-${task}-${part}.txt`;
const goalMarker = (task: number, part: 'a' | 'b') => `<goal file ${task} ${part}>`;

export async function writeGoalFiles(workspace: string, tasks: number): Promise<void> {
  for (let k = 1; k <= tasks; k++) {
    for (const [j, part] of (['a', 'b'] as const).entries()) {
      const bytes = costFileBytes(2 * k + j);
      const lines = [goalMarker(k, part)];
      for (let i = 1; lines.join('\n').length < bytes; i++) lines.push(`${k}${part}.${i} ${createHash('sha256').update(`goal:${k}:${part}:${i}`).digest('base64')}`);
      await fs.writeFile(path.join(workspace, goalFile(k, part)), `${lines.join('\n')}\n`);
    }
  }
}

export function goalCostScenario(tasks: number): ScenarioInput {
  const ids = Array.from({ length: tasks }, (_, i) => i + 1);
  const rules: ScenarioInput['rules'] = [
    {
      name: 'planner',
      match: { toolsOffered: ['submit_plan'] },
      reply: {
        content: [
          { type: 'text', text: `${tasks} independent tasks, one per pair of files.` },
          {
            type: 'tool_use',
            name: 'submit_plan',
            input: { tasks: ids.map((k) => ({ id: `t${k}`, title: `Summarize pair ${k}`, instructions: `Read ${goalFile(k, 'a')} and ${goalFile(k, 'b')} and summarize them.`, role: 'reader' })) },
          },
        ],
      },
    },
    {
      name: 'critic',
      match: { toolsOffered: ['submit_review'] },
      reply: { content: [{ type: 'tool_use', name: 'submit_review', input: { verdict: 'pass', findings: `All ${tasks} pairs were read and summarized. The goal is met.` } }] },
    },
  ];
  for (const k of ids) {
    const task = `task [t${k}]`;
    rules.push(
      { name: `t${k} reads a`, match: { systemContains: task, hasToolResults: false }, reply: { content: [{ type: 'text', text: `Reading ${goalFile(k, 'a')}.` }, { type: 'tool_use', name: 'read_file', input: { path: goalFile(k, 'a') } }] } },
      { name: `t${k} reads b`, match: { systemContains: task, lastUserContains: goalMarker(k, 'a') }, reply: { content: [{ type: 'text', text: `Now ${goalFile(k, 'b')}.` }, { type: 'tool_use', name: 'read_file', input: { path: goalFile(k, 'b') } }] } },
      { name: `t${k} finishes`, match: { systemContains: task, lastUserContains: goalMarker(k, 'b') }, reply: { content: [{ type: 'tool_use', name: 'finish_task', input: { status: 'succeeded', summary: `Pair ${k}: two files of numbered hashes, ${costFileBytes(2 * k) / 1024} KB and ${costFileBytes(2 * k + 1) / 1024} KB.` } }] } },
    );
  }
  return { name: 'bench-goal-cost', rules };
}

// The `responsive` scenario: a turn whose model call streams for ~3 s (60 chunks, 50 ms
// apart), during which the bench sends a message and interrupts; the message then gets its
// own turn, answered at once. And a turn whose model writes a file, which waits for approval.
export const responsiveSlowText = (tag: string) => `responsive slow (${tag})`;
export const responsiveFastText = (tag: string) => `responsive fast (${tag})`;
/** A turn whose model asks to write a file: it waits for an approval, which the bench times. */
export const responsiveApproveText = (tag: string) => `responsive approve (${tag})`;
const RESPONSIVE_CHUNKS = 60;
const RESPONSIVE_CHUNK_DELAY_MS = 50;

export function responsiveScenario(): ScenarioInput {
  return {
    name: 'responsive',
    rules: [
      { name: 'slow', match: { lastUserContains: 'responsive slow' }, reply: { content: [{ type: 'text', text: 'x'.repeat(16 * RESPONSIVE_CHUNKS) }], delayMs: RESPONSIVE_CHUNK_DELAY_MS, chunkSize: 16 } },
      { name: 'fast', match: { lastUserContains: 'responsive fast' }, reply: { content: [{ type: 'text', text: FINAL_TEXT }] } },
      { name: 'approve', match: { lastUserContains: 'responsive approve', hasToolResults: false }, reply: { content: [{ type: 'tool_use', name: 'write_file', input: { path: 'responsive-approved.txt', content: 'approved\n' } }] } },
      { name: 'written', match: { hasToolResults: true }, reply: { content: [{ type: 'text', text: FINAL_TEXT }] } },
    ],
  };
}
