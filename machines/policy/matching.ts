// Rule matching: which rule covers a call, with globs for paths and words for commands.
import { RULE_SYNTAX } from './config';
import { globMatches } from './glob';
import type { PolicyRequest } from './evaluate';
import { tokenizeShell, type WordToken } from './shell';
import { type CommandPart, type Subject, subjectOf } from './subjects';
import { assertNever } from './util';

interface ParsedRule {
  tool: string;
  pattern: string | undefined;
}

function parseRule(rule: string): ParsedRule {
  const match = RULE_SYNTAX.exec(rule.trim());
  // Rules are validated by the schema; an unparseable one can only come from a caller
  // that skipped it, and then it must match nothing rather than everything.
  if (!match) return { tool: '\u0000', pattern: undefined };
  return { tool: match[1] ?? '', pattern: match[2]?.trim() };
}

/**
 * `any`: the rule matches if it matches any part of a command (deny, ask).
 * `every`: every part of a command must be matched by some rule in the list (allow).
 */
/** Rules for this tool that name a command (a pattern): the ones an unreadable program defeats. */
export function programRules(rules: readonly string[], tool: string): string[] {
  return rules.filter((rule) => {
    const parsed = parseRule(rule);
    return parsed.pattern !== undefined && wildcard(parsed.tool, tool);
  });
}

export function firstMatch(rules: readonly string[], request: PolicyRequest, subject: Subject, mode: 'any' | 'every'): string | undefined {
  const candidates = rules.map((rule) => ({ rule, parsed: parseRule(rule) })).filter(({ parsed }) => wildcard(parsed.tool, request.tool));
  if (candidates.length === 0) return undefined;

  switch (subject.type) {
    case 'none':
    case 'path': {
      const hit = candidates.find(({ parsed }) => matchesNonCommand(parsed.pattern, subject));
      return hit?.rule;
    }
    case 'paths': {
      // Deny and ask: any file named matches; allow: every file named must match.
      const judge = (pattern: string | undefined) =>
        pattern === undefined ||
        (mode === 'any'
          ? subject.paths.some((p) => matchesNonCommand(pattern, { type: 'path', path: p }))
          : subject.paths.every((p) => matchesNonCommand(pattern, { type: 'path', path: p })));
      return candidates.find(({ parsed }) => judge(parsed.pattern))?.rule;
    }
    case 'command': {
      if (mode === 'any') {
        for (const part of subject.parts) {
          // Deny and ask rules also judge parts the tokenizer could not prove: a denied
          // command hidden in `$(…)` or after a redirect is still denied.
          const hit = candidates.find(({ parsed }) => parsed.pattern === undefined || tokensMatch(parsed.pattern, part.tokens));
          if (hit) return hit.rule;
        }
        return undefined;
      }
      // A bare tool rule (`run_command`) covers every command; patterns cover only the
      // parts they prove, and a part the tokenizer could not prove is never covered.
      const bare = candidates.find(({ parsed }) => parsed.pattern === undefined);
      if (bare) return bare.rule;
      if (subject.parts.length === 0) return undefined;
      const used: string[] = [];
      for (const part of subject.parts) {
        if (part.view) continue;
        if (part.unprovable) return undefined;
        const hit = candidates.find(({ parsed }) => parsed.pattern !== undefined && commandMatches(parsed.pattern, part));
        if (!hit) return undefined;
        if (!used.includes(hit.rule)) used.push(hit.rule);
      }
      return used.join(', ');
    }
    default:
      return assertNever(subject);
  }
}

function matchesNonCommand(pattern: string | undefined, subject: Subject): boolean {
  if (pattern === undefined) return true;
  if (subject.type !== 'path' || subject.path.type !== 'inside') return false;
  return pathGlobMatches(pattern, subject.path.path);
}

/** A workspace-relative glob; a pattern that itself points outside matches nothing. */
export function pathGlobMatches(pattern: string, relativePath: string): boolean {
  const normalizedPattern = normalizeGlob(pattern);
  if (normalizedPattern === undefined) return false;
  return globMatches(relativePath, normalizedPattern);
}

function normalizeGlob(pattern: string): string | undefined {
  let p = pattern.trim();
  if (p.startsWith('/')) return undefined;
  while (p.startsWith('./')) p = p.slice(2);
  if (p === '' || p === '.') return '.';
  if (p.split('/').some((segment) => segment === '..')) return undefined;
  return p;
}

function wildcard(pattern: string, value: string): boolean {
  if (!pattern.includes('*')) return pattern === value;
  const source = pattern
    .split('*')
    .map((piece) => piece.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${source}$`, 's').test(value);
}

/**
 * Token-prefix matching: each pattern token matches the command token at the same
 * place (`*` inside a token matches any characters); a `*` at the end of the pattern
 * also lets any further tokens follow. `npm test*` matches `npm test`, `npm test -- -u`
 * and `npm test:unit`, but not `npm install`.
 */
export function commandMatches(pattern: string, part: CommandPart): boolean {
  // Allowing needs certainty; denying and asking do not (see firstMatch).
  if (part.unprovable) return false;
  return tokensMatch(pattern, part.tokens);
}

function tokensMatch(pattern: string, tokens: readonly string[]): boolean {
  const tokenized = tokenizeShell(pattern);
  if (tokenized.type === 'error') return false;
  const patternTokens = tokenized.tokens.filter((token): token is WordToken => token.type === 'word').map((token) => token.text);
  if (patternTokens.length === 0) return false;
  const last = patternTokens[patternTokens.length - 1] ?? '';
  const open = last.endsWith('*');
  if (last === '*') patternTokens.pop();
  if (patternTokens.length === 0) return true;
  if (tokens.length < patternTokens.length) return false;
  if (!open && tokens.length !== patternTokens.length) return false;
  return patternTokens.every((token, index) => wildcard(token, tokens[index] ?? ''));
}

/** Whether an allow-style rule covers a call (every part of a command). */
export function ruleCovers(rule: string, request: PolicyRequest): boolean {
  return firstMatch([rule], request, subjectOf(request), 'every') !== undefined;
}
