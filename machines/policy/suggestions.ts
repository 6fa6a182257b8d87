// The rules offered to a person for "approve for session": the narrowest that still reads as a
// rule, and the one old histories remembered.
import { PolicyRule } from './config';
import type { PolicyRequest } from './evaluate';
import { ruleCovers } from './matching';
import { quoteForRule } from './shell';
import { subjectOf } from './subjects';
import { assertNever } from './util';

/**
 * The rule a person is offered to remember instead of the exact call — the narrowest
 * that still reads as a rule: the whole command word for word (no trailing `*`), or
 * the exact path. They may edit it; undefined when no rule can say it (`a && b`).
 */
export function suggestedRuleFor(request: PolicyRequest): string | undefined {
  const subject = subjectOf(request);
  switch (subject.type) {
    case 'command': {
      if (subject.parts.filter((p) => !p.view).length !== 1 || !subject.parts[0] || subject.parts[0].unprovable) return undefined;
      const rule = `${request.tool}(${subject.parts[0].tokens.map(quoteForRule).join(' ')})`;
      return PolicyRule.safeParse(rule).success && ruleCovers(rule, request) ? rule : undefined;
    }
    case 'path':
      return subject.path.type === 'inside' ? `${request.tool}(${subject.path.path})` : undefined;
    case 'paths': {
      const only = subject.paths.length === 1 ? subject.paths[0] : undefined;
      return only?.type === 'inside' ? `${request.tool}(${only.path})` : undefined;
    }
    case 'none':
      return request.tool;
    default:
      return assertNever(subject);
  }
}

/**
 * What "for the session" remembered before approvals became exact: the first two words
 * of a command (`rm -rf*`), or the bare tool. Kept only so that histories recorded
 * before the change replay as they ran (workflows choose it behind a patch marker);
 * never used for a new approval.
 */
export function legacySessionRuleFor(request: PolicyRequest): string {
  const subject = subjectOf(request);
  switch (subject.type) {
    case 'command': {
      if (subject.parts.filter((p) => !p.view).length !== 1 || !subject.parts[0] || subject.parts[0].unprovable) return request.tool;
      return `${request.tool}(${subject.parts[0].tokens.slice(0, 2).map(quoteForRule).join(' ')}*)`;
    }
    case 'path':
      return subject.path.type === 'inside' ? `${request.tool}(${subject.path.path})` : request.tool;
    case 'paths':
    case 'none':
      return request.tool;
    default:
      return assertNever(subject);
  }
}
