// Command rules judge what runs, not how it is spelled: a deny rule on `rm` holds for
// `/bin/rm`, `command rm`, `env X=1 rm`, `exec rm`, `sh -c 'rm …'`, `xargs rm`,
// `find -exec rm`, and every command of a pipeline or list; an allow rule still covers
// only the command as written.
import { describe, expect, it } from 'vitest';
import { commandViews, programName } from '../../machines/policy/command-views';
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
    'tools/rm x',
    // The program is computed when it runs, or a shell reads its commands from a pipe: no
    // rule on programs can be checked, so the command is refused.
    'k=rm; $k x',
    '$(echo rm) x',
    '`echo rm` x',
    'echo "rm x" | sh',
    'bash -s < cmds.txt',
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
    expect(decide('./build.sh')).toBe('allow');
    // A rule names a program wherever it lives: `rm*` holds for ./rm-old-files.sh and /opt/x/curl2 too
    // (before, only system paths were read by their base name, and /opt/bin/curl got past `curl*`).
    expect(decide('./rm-old-files.sh')).toBe('deny');
    expect(decide('/opt/tools/bin/curl http://example.com')).toBe('deny');
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
