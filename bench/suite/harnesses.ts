// The bench's scenarios with a harness of their own: each compares Keel with Keel doing the
// same work another way (four children against one session doing their steps; a fork against a
// new session in a copy of the workspace), not with the floor, and starts its own dev server,
// worker and stand-in. `npm run bench` runs them as processes after the suite's scenarios, one
// at a time (a second dev server beside the suite's would be in its measurements), and its
// report carries their results. Each script's header says what it measures and how.
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { root } from './variants';

interface Harness {
  script: string;
  /** What the issue asks of it, for the report. */
  what: string;
  /** Its arguments at the full sizes, and at `--quick`. */
  args: { full: readonly string[]; quick: readonly string[] };
}

export const HARNESSES = {
  'sub-agents': {
    script: 'bench/sub-agents.ts',
    what: 'a turn with 4 parallel children against one session doing their steps itself; a fork of a turn reading the prompt cache',
    args: { full: [], quick: ['--rounds', '1', '--child-steps', '1,3'] },
  },
  fork: {
    script: 'bench/fork.ts',
    what: 'forks spread over a long session with checkpoints (100 turns at full size) against a new session in a copy of its workspace',
    args: { full: [], quick: ['--turns', '12', '--forks', '2', '--files', '100'] },
  },
} as const satisfies Record<string, Harness>;

export type HarnessName = keyof typeof HARNESSES;
export const HARNESS_NAMES = Object.keys(HARNESSES) as HarnessName[];

interface HarnessRun {
  name: HarnessName;
  /** `<dir>/<file>.{json,md}`. */
  file: string;
  seconds: number;
}
/** A harness that finished, with its report, or one that did not, with why (its own output, printed as it ran, says more). */
export type HarnessResult = (HarnessRun & { ok: true; markdown: string }) | (HarnessRun & { ok: false; failure: string });

/** Runs one harness as a process (its output goes to this one's) and reads back its report. */
export async function runHarness(name: HarnessName, options: { quick: boolean; dir: string; runName: string }): Promise<HarnessResult> {
  const harness = HARNESSES[name];
  const file = `${options.runName}-${name}`;
  const args = ['--import', 'tsx', harness.script, ...(options.quick ? harness.args.quick : harness.args.full), '--out', file, '--dir', options.dir];
  const started = performance.now();
  const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: Error }>((resolve) => {
    const child = spawn(process.execPath, args, { cwd: root, stdio: 'inherit' });
    child.once('error', (error) => resolve({ code: null, signal: null, error }));
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  const seconds = (performance.now() - started) / 1000;
  if (exit.error || exit.code !== 0) {
    const failure = exit.error ? `could not start: ${exit.error.message}` : exit.signal ? `ended by ${exit.signal}` : `exited with code ${String(exit.code)}`;
    return { name, file, ok: false, seconds, failure: `\`node --import tsx ${harness.script}\` ${failure}` };
  }
  const markdown = await fs.readFile(path.join(options.dir, `${file}.md`), 'utf8').catch(() => undefined);
  if (markdown === undefined) return { name, file, ok: false, seconds, failure: `${harness.script} wrote no ${file}.md` };
  return { name, file, ok: true, seconds, markdown };
}

/** What the run's JSON keeps of a harness: where its own results are, or why there are none. */
export const harnessSummary = (r: HarnessResult) => ({ name: r.name, file: r.file, seconds: r.seconds, ...(r.ok ? { ok: true as const } : { ok: false as const, failure: r.failure }) });

/** The run's report with the harnesses' part after the scenarios': each one's own report, under a heading, or why it is missing. */
export function withHarnesses(suiteMarkdown: string, results: readonly HarnessResult[]): string {
  if (results.length === 0) return suiteMarkdown;
  const parts = results.map((r) => {
    const head = `## Scenario \`${r.name}\` (${HARNESSES[r.name].what}; ${HARNESSES[r.name].script}, ${r.seconds.toFixed(0)} s)`;
    // Their own titles become subheadings of the run's report.
    const body = r.ok ? r.markdown.replace(/^# /gm, '### ') : `**Did not finish**: ${r.failure}. Nothing of it was measured; its own output, printed in the run's, says why.`;
    return `${head}\n\n${body.trim()}\n`;
  });
  return `${suiteMarkdown.trimEnd()}\n\n${parts.join('\n')}`;
}
