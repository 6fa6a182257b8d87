// An approval of a command that runs a file of the workspace (`./build.sh`, `bash x.sh`,
// `node x.js`, `npm run build` reading package.json, `make` reading the Makefile) is bound
// to that file's content: the human approved what the file said then, not whatever the
// agent writes into it afterwards. The words of a command that may name such a file are
// found here, from the same parse the policy judges (every part of a pipeline or list, and
// what wrappers and `sh -c` run); the worker resolves them to real files inside the
// workspace and hashes them (activities/tools/script-hash.ts). A remembered approval holds
// the hashes; a call under it whose file changed is not run, and the approval is dropped,
// so the same call asks the human again.
import { commandPartsOf, programName, sameApproval, type CommandPart, type SessionApproval } from './policy';
import type { ScriptHashes } from './script-hashes';
import type { ToolFacts } from './tool-result';

export { scriptHashesSchema, type ScriptHashes } from './script-hashes';

/** Programs that run the file named by their first operand. */
const INTERPRETERS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'mksh', 'ash', 'source', '.', 'node', 'nodejs', 'python', 'python2', 'python3', 'perl', 'ruby', 'php', 'lua', 'Rscript', 'tsx', 'ts-node', 'deno', 'bun']);
/** Package managers: whatever they run comes from package.json's scripts (install runs lifecycle scripts too). */
const PACKAGE_MANAGERS = new Set(['npm', 'pnpm', 'yarn']);
/** The files make reads when given no -f. */
const MAKEFILES = ['GNUmakefile', 'makefile', 'Makefile'];

/**
 * The words of a run_command input that may name a workspace file it runs, relative to the
 * command's cwd or absolute. Over-inclusive by design: a word that is not a file inside the
 * workspace is dropped by the worker, which resolves each one.
 */
export function scriptWordsOf(command: unknown): string[] {
  const words = new Set<string>();
  for (const part of commandPartsOf(command)) for (const word of wordsOfPart(part)) words.add(word);
  return [...words].slice(0, 64);
}

function wordsOfPart(part: CommandPart): string[] {
  const [program = '', ...rest] = part.tokens;
  const out: string[] = [];
  // A program named by a path (`./build.sh`, `scripts/x`, `/work/ws/bin/tool`) is itself the file.
  if (program.includes('/')) out.push(program);
  const name = programName(program);
  if (INTERPRETERS.has(name)) {
    // `sh -c '…'` runs a string, judged as parts of its own (commandViews).
    if (rest.some((w) => /^-[A-Za-z]*c[A-Za-z]*$/.test(w)) && ['sh', 'bash', 'dash', 'zsh', 'ksh', 'mksh', 'ash'].includes(name)) return out;
    const operands = rest.filter((w) => !w.startsWith('-'));
    // `deno run x.ts`, `bun run x.ts`: the file follows the subcommand.
    const first = (name === 'deno' || name === 'bun') && (operands[0] === 'run' || operands[0] === 'x') ? operands[1] : operands[0];
    if (first !== undefined) out.push(first);
    if (name === 'bun') out.push('package.json');
  }
  if (PACKAGE_MANAGERS.has(name)) out.push('package.json');
  if (name === 'make' || name === 'gmake') {
    const f = rest.findIndex((w) => w === '-f' || w === '--file' || w === '--makefile');
    const named = f >= 0 ? rest[f + 1] : undefined;
    out.push(...(named !== undefined ? [named] : MAKEFILES));
  }
  return out;
}

export interface ScriptChange {
  path: string;
  approved: string;
  /** Null: the file is gone or is no longer a regular file inside the workspace. */
  now: string | null;
}

/** The files of `bound` the command runs now whose content is not what was approved. */
export function changedScripts(bound: ScriptHashes, now: ScriptHashes, runs: readonly string[]): ScriptChange[] {
  const changes: ScriptChange[] = [];
  for (const path of runs) {
    const approved = bound[path];
    if (approved === undefined) continue;
    const current = now[path] ?? null;
    if (current !== approved) changes.push({ path, approved, now: current });
  }
  return changes;
}

/** One line for the model and the human: which files changed since the approval, and what happens next. */
export function describeScriptChanges(changes: readonly ScriptChange[]): string {
  const short = (h: string | null) => (h === null ? 'gone' : `${h.slice(0, 'sha256:'.length + 12)}…`);
  const files = changes.map((c) => `${c.path} (approved ${short(c.approved)}, now ${short(c.now)})`).join(', ');
  return `${files} changed after the approval was given; the command did not run. The approval no longer holds: the same call will ask a human again`;
}

/** Hashes of `extra` added to `bound` for files it does not bind yet: what was approved first stays bound. */
export function bindScripts(bound: ScriptHashes | undefined, extra: ScriptHashes): ScriptHashes {
  const next: ScriptHashes = { ...extra, ...bound };
  return Object.fromEntries(Object.entries(next).slice(0, 64));
}

/** What a call that ran under a remembered approval does to it: binds the files it ran, or drops it because one changed. */
export type ApprovalSettlement = { type: 'bind'; scripts: ScriptHashes } | { type: 'drop' };

/**
 * From the facts of a call that ran under a remembered approval: the files it ran bind the
 * approval, and a refusal because one changed drops it, so the same call asks a human again.
 * Null: the approval stays as it is.
 */
export function settlementOf(facts: ToolFacts | undefined): ApprovalSettlement | null {
  if (facts?.kind === 'refused' && facts.reason === 'script_changed') return { type: 'drop' };
  if (facts?.kind === 'command' && facts.scripts !== undefined) return { type: 'bind', scripts: facts.scripts };
  return null;
}

/**
 * The remembered approvals after a settlement of `under` (the approval the call's verdict
 * carried): found as data (sameApproval), never by how an approval reads. What was bound
 * first stays bound.
 */
export function settleApproval(approvals: readonly SessionApproval[], under: SessionApproval, settlement: ApprovalSettlement): SessionApproval[] {
  switch (settlement.type) {
    case 'drop':
      return approvals.filter((a) => !sameApproval(a, under));
    case 'bind':
      return approvals.map((a) => (sameApproval(a, under) ? { ...a, scripts: bindScripts(a.scripts, settlement.scripts) } : a));
    default: {
      const never: never = settlement;
      throw new Error(`unknown settlement ${JSON.stringify(never)}`);
    }
  }
}
