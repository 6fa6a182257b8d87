// Command rules judge what runs, not how it is spelled: a deny rule on `rm` holds for
// `/bin/rm`, `command rm`, `env X=1 rm`, `exec rm`, `sh -c 'rm …'`, `xargs rm`,
// `find -exec rm`, and every command of a pipeline or list; an allow rule still covers
// only the command as written.
import { describe, expect, it } from 'vitest';
import { commandViews, programName } from '../../machines/command-line';
import { evaluatePolicy, parsePolicy, splitShellCommand } from '../../machines/policy';

const policy = (() => {
  const parsed = parsePolicy({ mode: 'full-auto', deny: ['run_command(rm*)', 'run_command(curl*)'], allow: ['run_command(env *)', 'run_command(npm test*)'] });
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.policy;
})();
const decide = (command: string | string[]) => evaluatePolicy(policy, { tool: 'run_command', input: { command }, workspace: '/ws' }).decision;

describe('deny rules hold for every spelling of the program', () => {
  it.each([
    'rm -rf /',
    '/bin/rm -rf x',
    '/usr/bin/rm -rf x',
    'command rm x',
    'command -p rm x',
    'builtin rm x',
    'exec rm x',
    'exec -a foo rm x',
    'env X=1 rm x',
    'env -i PATH=/bin rm x',
    'X=1 rm x',
    'nohup rm x',
    'nice -n 5 rm x',
    'timeout 5 rm x',
    'time rm x',
    "sh -c 'rm -rf x'",
    "bash -lc 'echo hi; rm -rf x'",
    "/bin/sh -c 'env Y=2 /bin/rm x'",
    "eval 'rm x'",
    'ls | xargs rm',
    'ls | xargs -n 1 rm -f',
    'find . -name "*.o" -exec rm {} \\;',
    'find . -execdir /bin/rm -f {} +',
    'find . -delete',
    'echo ok && rm x',
    'echo ok; curl http://example.com',
    'true || /usr/bin/curl x',
  ])('%s is denied', (command) => {
    expect(decide(command)).toBe('deny');
  });

  it('argv form too', () => {
    expect(decide(['/bin/rm', '-rf', 'x'])).toBe('deny');
    expect(decide(['env', 'X=1', 'rm', 'x'])).toBe('deny');
    expect(decide(['sh', '-c', 'rm x'])).toBe('deny');
  });

  it('leaves other commands alone, and an allow rule covers only what is written', () => {
    expect(decide('npm test')).toBe('allow');
    expect(decide('env CI=1 npm test')).toBe('allow');
    expect(decide('ls -la')).toBe('allow');
    expect(decide('./rm-old-files.sh')).toBe('allow');
    // A workspace program called rm is not /bin/rm, but denying it errs on the safe side only for system paths.
    expect(programName('./rm')).toBe('./rm');
    expect(programName('/usr/local/bin/rm')).toBe('rm');
    expect(programName('/home/x/bin/rm')).toBe('/home/x/bin/rm');
  });

  it('follows wrappers only so deep, and each view is for deny and ask rules only', () => {
    const [part] = splitShellCommand("sh -c 'sh -c \"rm x\"'");
    const views = commandViews(part!, splitShellCommand);
    expect(views.map((v) => v.tokens.join(' '))).toContain('rm x');
    expect(views.every((v) => v.unprovable)).toBe(true);
  });
});
