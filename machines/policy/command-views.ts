// What a simple command really runs, for rules that deny or ask: `/bin/rm`, `command rm`,
// `env X=1 rm`, `builtin`/`exec`/`nohup`/`nice`/`timeout`/`time` in front of it, the
// commands inside `sh -c '…'` (and bash, dash, zsh), `eval`, `xargs rm` and
// `find … -exec rm {} ;`. Each yields the command as the program it names, so a deny rule
// on `rm` catches every spelling. The views are added to the parts a rule judges (subjects.ts
// subjectOf): a deny or ask rule matching any of them holds; an allow rule must still cover
// the command as written, so a wrapper never widens what an allow rule lets through.
import type { CommandPart } from './subjects';

/** Directories whose programs are named by their base name (`/usr/bin/rm` is `rm`). */
const SYSTEM_BIN = /^\/(usr\/(local\/)?)?s?bin\/[^/]+$/;
const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'mksh', 'ash', 'busybox']);
/** Wrappers that run the rest of their words as a command, with how many option words they may take. */
const PREFIX_WRAPPERS = new Set(['command', 'builtin', 'exec', 'nohup', 'time', 'setsid', 'stdbuf', 'nice', 'ionice', 'chrt', 'taskset', 'timeout', 'env', 'doas', 'sudo', 'unbuffer', 'xargs']);
/** How deep wrappers and `sh -c` are followed; deeper nesting is judged as written only. */
const MAX_DEPTH = 6;

/** The program a word names: the base name of a system path, else the word itself. */
export function programName(word: string): string {
  return SYSTEM_BIN.test(word) ? word.slice(word.lastIndexOf('/') + 1) : word;
}

/**
 * Every way `part` runs a program, besides the part itself: wrappers stripped, system paths
 * named by their base name, shell strings parsed. Views are marked unprovable: they
 * serve deny and ask rules only.
 */
export function commandViews(part: CommandPart, split: (command: string) => CommandPart[], depth = 0): CommandPart[] {
  if (depth >= MAX_DEPTH || part.tokens.length === 0) return [];
  const views: CommandPart[] = [];
  const add = (tokens: string[]) => {
    if (tokens.length === 0) return;
    const view = { tokens, unprovable: true };
    views.push(view, ...commandViews(view, split, depth + 1));
  };
  let tokens = [...part.tokens];
  // Leading assignments (`X=1 rm`) set the environment; the command follows.
  let skipped = 0;
  while (skipped < tokens.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(tokens[skipped] ?? '')) skipped += 1;
  if (skipped > 0) {
    add(tokens.slice(skipped));
    return views;
  }
  const program = tokens[0] ?? '';
  const name = programName(program);
  if (name !== program) {
    tokens = [name, ...tokens.slice(1)];
    add(tokens);
    return views;
  }
  // Any other path (`./rm`, `tools/rm`, `/opt/x/rm`) runs the program of that base name as
  // far as a deny or ask rule is concerned: a rule on `rm` does not depend on where it lives.
  if (program.includes('/') && !program.endsWith('/')) {
    add([program.slice(program.lastIndexOf('/') + 1), ...tokens.slice(1)]);
    return views;
  }
  const rest = tokens.slice(1);
  if (SHELLS.has(name)) {
    // sh -c 'string' [name args…]: the string is a command line of its own.
    const at = rest.findIndex((word) => /^-[A-Za-z]*c[A-Za-z]*$/.test(word));
    const script = at >= 0 ? rest[at + 1] : undefined;
    if (script !== undefined) for (const inner of split(script)) add(inner.tokens);
    return views;
  }
  if (name === 'eval') {
    for (const inner of split(rest.join(' '))) add(inner.tokens);
    return views;
  }
  if (name === 'find') {
    // find … -exec cmd args ; / -execdir / -ok / -okdir: cmd runs once per file.
    for (let i = 0; i < rest.length; i += 1) {
      if (!['-exec', '-execdir', '-ok', '-okdir'].includes(rest[i] ?? '')) continue;
      const end = rest.findIndex((word, j) => j > i && (word === ';' || word === '+'));
      add(rest.slice(i + 1, end < 0 ? undefined : end));
    }
    if (rest.includes('-delete')) add(['rm', ...rest]);
    return views;
  }
  if (PREFIX_WRAPPERS.has(name)) {
    add(skipWrapperOptions(name, rest));
    return views;
  }
  return views;
}

/**
 * A command whose program cannot be read from the command line: a word computed when it runs
 * (`$k x`, `$(echo rm) x`, a backquoted word) in the program's place, or a shell taking its
 * commands from a pipe or standard input (`… | sh`, `bash -s`). No rule on the program can
 * be checked against it; the policy refuses it where such a rule exists. Returns the
 * offending words, or undefined. `parts` are a command's parts with their views.
 */
export function opaqueProgram(parts: readonly CommandPart[]): string | undefined {
  for (const part of parts) {
    const program = firstProgramWord(part.tokens);
    if (program === undefined) continue;
    if (/[$`]/.test(program)) return program;
    const name = programName(program);
    if (SHELLS.has(name)) {
      const rest = part.tokens.slice(part.tokens.indexOf(program) + 1);
      const runsString = rest.some((word) => /^-[A-Za-z]*c[A-Za-z]*$/.test(word));
      const runsFile = rest.some((word) => !word.startsWith('-'));
      const fromStdin = rest.some((word) => word === '-s' || word === '-');
      if (!runsString && (!runsFile || fromStdin)) return part.tokens.join(' ');
    }
  }
  return undefined;
}

/** The word in the program's place, after leading assignments. */
function firstProgramWord(tokens: readonly string[]): string | undefined {
  return tokens.find((word) => !/^[A-Za-z_][A-Za-z0-9_]*=/.test(word));
}

/** The words after a wrapper's own options (and, for env, its assignments; for timeout, its duration). */
function skipWrapperOptions(name: string, words: string[]): string[] {
  let i = 0;
  /** Options of these wrappers that take a value in the next word. */
  const withValue: Record<string, string[]> = {
    env: ['-u', '--unset', '-C', '--chdir', '-S', '--split-string'],
    nice: ['-n', '--adjustment'],
    ionice: ['-c', '-n', '-p', '-t'],
    exec: ['-a'],
    timeout: ['-s', '--signal', '-k', '--kill-after'],
    stdbuf: ['-i', '-o', '-e'],
    xargs: ['-a', '-d', '-E', '-e', '-I', '-i', '-L', '-l', '-n', '-P', '-s', '--arg-file', '--delimiter', '--max-args', '--max-procs', '--max-chars', '--replace'],
    sudo: ['-u', '-g', '-C', '-D', '-h', '-p', '-r', '-t', '-U'],
    doas: ['-u', '-C'],
    chrt: [],
    taskset: [],
  };
  while (i < words.length) {
    const word = words[i] ?? '';
    if (word === '--') {
      i += 1;
      break;
    }
    if (name === 'env' && /^[A-Za-z_][A-Za-z0-9_]*=/.test(word)) {
      i += 1;
      continue;
    }
    if (!word.startsWith('-') || word === '-') break;
    i += (withValue[name] ?? []).includes(word) ? 2 : 1;
  }
  // timeout DURATION cmd; chrt PRIORITY cmd; taskset MASK cmd.
  if (name === 'timeout' || name === 'chrt' || name === 'taskset') i += 1;
  return words.slice(i);
}
