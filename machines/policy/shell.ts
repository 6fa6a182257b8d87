// A small POSIX-shell tokenizer, enough to split a command line into its simple
// commands and their words. It does not expand anything; what it cannot read with
// certainty marks the part unprovable, so no allow rule can cover it.
import type { CommandPart } from './subjects';
import { assertNever } from './util';

export interface WordToken {
  type: 'word';
  text: string;
  /** Held an unquoted or double-quoted `$(`, `` ` `` or `<(`/`>(`. */
  substitution: boolean;
}
type ShellToken = WordToken | { type: 'operator'; op: string } | { type: 'redirect'; op: string };

type Tokenized = { type: 'ok'; tokens: ShellToken[] } | { type: 'error'; message: string };

const SEPARATORS = ['&&', '||', ';;', ';', '|&', '|', '&', '\n'];

export function tokenizeShell(input: string): Tokenized {
  const tokens: ShellToken[] = [];
  let word = '';
  let inWord = false;
  let substitution = false;
  const flush = () => {
    if (inWord) tokens.push({ type: 'word', text: word, substitution });
    word = '';
    inWord = false;
    substitution = false;
  };

  let i = 0;
  while (i < input.length) {
    const c = input[i] ?? '';
    if (c === '\\') {
      if (input[i + 1] === '\n') {
        i += 2;
        continue;
      }
      if (i + 1 >= input.length) return { type: 'error', message: 'trailing backslash' };
      word += input[i + 1];
      inWord = true;
      i += 2;
      continue;
    }
    if (c === "'") {
      const end = input.indexOf("'", i + 1);
      if (end < 0) return { type: 'error', message: 'unterminated single quote' };
      word += input.slice(i + 1, end);
      inWord = true;
      i = end + 1;
      continue;
    }
    if (c === '"') {
      i += 1;
      inWord = true;
      let closed = false;
      while (i < input.length) {
        const d = input[i] ?? '';
        if (d === '"') {
          closed = true;
          i += 1;
          break;
        }
        if (d === '\\' && i + 1 < input.length && '$`"\\\n'.includes(input[i + 1] ?? '')) {
          word += input[i + 1];
          i += 2;
          continue;
        }
        if (d === '`' || (d === '$' && input[i + 1] === '(')) substitution = true;
        word += d;
        i += 1;
      }
      if (!closed) return { type: 'error', message: 'unterminated double quote' };
      continue;
    }
    if (c === '`') {
      // A backquoted command spans spaces: keep it whole so it can be judged on its own.
      const end = input.indexOf('`', i + 1);
      if (end < 0) return { type: 'error', message: 'unterminated backquote' };
      substitution = true;
      word += input.slice(i, end + 1);
      inWord = true;
      i = end + 1;
      continue;
    }
    if ((c === '$' && input[i + 1] === '(') || ((c === '<' || c === '>') && input[i + 1] === '(')) {
      substitution = true;
      word += c;
      inWord = true;
      i += 1;
      continue;
    }
    if (c === '#' && !inWord) {
      const end = input.indexOf('\n', i);
      i = end < 0 ? input.length : end;
      continue;
    }
    if (c === ' ' || c === '\t') {
      flush();
      i += 1;
      continue;
    }
    const separator = SEPARATORS.find((op) => input.startsWith(op, i));
    if (separator) {
      flush();
      tokens.push({ type: 'operator', op: separator });
      i += separator.length;
      continue;
    }
    if (c === '<' || c === '>') {
      // A word made only of digits right before a redirect is its file descriptor (`2>&1`).
      const fd = inWord && /^\d+$/.test(word) && !substitution ? word : '';
      if (fd) {
        word = '';
        inWord = false;
      } else {
        flush();
      }
      let op = c;
      const next = input[i + 1];
      if (next === c || next === '&' || (c === '>' && next === '|') || (c === '<' && next === '>')) op += next;
      tokens.push({ type: 'redirect', op: fd + op });
      i += op.length;
      continue;
    }
    if (c === '(' || c === ')' || c === '{' || c === '}') {
      // Subshells and groups: treated as separators, and the part is marked unprovable
      // by the splitter because it cannot see what they wrap with certainty.
      flush();
      tokens.push({ type: 'operator', op: c });
      i += 1;
      continue;
    }
    word += c;
    inWord = true;
    i += 1;
  }
  flush();
  return { type: 'ok', tokens };
}

/** Splits a shell command on `&&`, `||`, `;`, `|`, `&` and newlines into simple commands. */
export function splitShellCommand(command: string): CommandPart[] {
  const tokenized = tokenizeShell(command);
  if (tokenized.type === 'error') return [{ tokens: [command], unprovable: true }];
  const parts: CommandPart[] = [];
  const nested: string[] = [];
  let current: CommandPart = { tokens: [], unprovable: false };
  const push = () => {
    if (current.tokens.length > 0 || current.unprovable) parts.push(current);
    current = { tokens: [], unprovable: false };
  };
  const tokens = tokenized.tokens;
  for (let index = 0; index < tokens.length; index += 1) {
    const token = tokens[index];
    if (!token) continue;
    switch (token.type) {
      case 'word':
        current.tokens.push(token.text);
        if (token.substitution) {
          current.unprovable = true;
          nested.push(...substitutionsIn(token.text));
        }
        break;
      case 'operator':
        if (token.op === '(' || token.op === ')' || token.op === '{' || token.op === '}') current.unprovable = true;
        push();
        if (token.op === '(' || token.op === '{') current.unprovable = true;
        break;
      case 'redirect': {
        const target = tokens[index + 1];
        // Duplicating a descriptor (`2>&1`) or discarding output is harmless; any other
        // redirect reads or writes a file the rules did not look at.
        const harmless =
          (token.op.endsWith('&') && target?.type === 'word' && /^(\d+|-)$/.test(target.text)) ||
          (target?.type === 'word' && target.text === '/dev/null' && !target.substitution);
        if (!harmless) current.unprovable = true;
        if (target?.type === 'word') index += 1;
        break;
      }
      default:
        assertNever(token);
    }
  }
  push();
  // Commands inside `$(…)` and backticks of a word run too: judge them as parts of their own.
  for (const inner of nested) {
    for (const part of splitShellCommand(inner)) parts.push({ ...part, unprovable: true });
  }
  return parts;
}

function substitutionsIn(word: string): string[] {
  const found: string[] = [];
  for (const match of word.matchAll(/\$\(([^]*)\)|`([^`]*)`/g)) {
    const inner = match[1] ?? match[2];
    if (inner) found.push(inner);
  }
  return found;
}

export function quoteForRule(token: string): string {
  return /^[A-Za-z0-9_./:=@%+,-]+$/.test(token) ? token : `'${token.replace(/'/g, `'\\''`)}'`;
}
