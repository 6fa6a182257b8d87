// What a human approves at the terminal is what they saw: `keel approve` shows the whole
// call (every argument, the diff of a write, control characters escaped, paged at a
// terminal), names the call, needs --call when several wait, and asks `y` unless --yes.
// `keel chat` shows the same view before its [y/n/always]. Real worker, dev server, stand-in,
// and the real `keel` binary.
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { KeelClient } from '../../client/index';
import { cliEnv, keel, keelLive } from '../fixtures/client-cli';
import { say, sessionEnv, waitUntil } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';
import { tempDir } from '../fixtures/temp-dir';

const run = promisify(execFile);
const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../client/bin/keel.js');

const { env, workflowBundle } = useTemporal();

// A command longer than any preview, with an escape sequence that would clear the screen.
const COMMAND = `echo start && echo ${'x'.repeat(9_000)} && printf '\u001b[2J' && echo THE-END-OF-THE-COMMAND`;
const CONTENT = `${Array.from({ length: 80 }, (_, i) => `line ${i + 1}`).join('\n')}\nTHE-LAST-LINE\n`;

describe('keel approve shows the whole call', () => {
  it('names it, needs --call when two wait, asks y, escapes control characters, pages a long diff', async () => {
    const s = await sessionEnv(
      env,
      workflowBundle,
      {
        rules: [
          {
            match: { lastUserContains: 'do both', hasToolResults: false },
            reply: {
              content: [
                { type: 'tool_use', name: 'run_command', input: { command: COMMAND }, id: 'toolu_cmd' },
                { type: 'tool_use', name: 'write_file', input: { path: 'big.txt', content: CONTENT }, id: 'toolu_write' },
              ],
            },
          },
          { match: { hasToolResults: true }, reply: say('Both done.') },
        ],
      },
      { ANTHROPIC_API_KEY: 'sk-ant-demo' },
    );
    await s.run(async () => {
      const cli = cliEnv(s.taskQueue);
      const client = await KeelClient.connect({ client: env.client, taskQueue: s.taskQueue });
      const session = await client.startSession({ workspace: s.workspace, policy: { mode: 'ask' } });
      await session.post('do both');
      await waitUntil(() => session.pendingApprovals(), (p) => p.length === 2, 30_000, 'two approvals');

      // Two wait and none is named: a usage error listing both, nothing approved.
      const unnamed = await keel(['approve', session.id, '--yes'], cli);
      expect(unnamed.code, unnamed.stderr).toBe(2);
      expect(unnamed.stderr).toMatch(/2 calls of \S+ wait: name one with --call <callId>/);
      expect(unnamed.stderr).toMatch(/toolu_cmd\s+run_command/);
      expect(unnamed.stderr).toMatch(/toolu_write\s+write_file/);

      // The whole command, its escape shown, not run; "n" sends nothing (5), no answer is a usage error (2).
      const declined = await keel(['approve', session.id, '--call', 'toolu_cmd'], cli, 'n\n');
      expect(declined.code, declined.stderr).toBe(5);
      expect(declined.stdout).toContain('tool call toolu_cmd: run_command');
      expect(declined.stdout).toContain('THE-END-OF-THE-COMMAND');
      expect(declined.stdout).toContain('x'.repeat(9_000));
      expect(declined.stdout).toContain('\\u001b[2J');
      expect(declined.stdout).not.toContain('\u001b');
      expect(declined.stderr).toMatch(/not approved: nothing was sent/);
      const silent = await keel(['approve', session.id, '--call', 'toolu_cmd'], cli);
      expect(silent.code, silent.stderr).toBe(2);
      expect(silent.stderr).toMatch(/no answer on stdin/);
      expect((await session.pendingApprovals()).map((p) => p.callId).sort()).toEqual(['toolu_cmd', 'toolu_write']);

      // keel chat, attached now, shows the same whole call before its question.
      const chat = keelLive(['chat', '--session', session.id], cli);
      try {
        await chat.waitFor(/allow write_file toolu_write .*\[y\/n\/always\]/);
        const before = chat.stdout.slice(0, chat.stdout.indexOf('allow run_command toolu_cmd '));
        expect(before).toContain('THE-END-OF-THE-COMMAND');
        expect(chat.stdout.slice(0, chat.stdout.indexOf('allow write_file toolu_write '))).toContain('+THE-LAST-LINE');
        chat.send('/quit');
        expect(await chat.end()).toBe(0);
      } finally {
        if (chat.child.exitCode === null) chat.child.kill();
      }

      const approved = await keel(['approve', session.id, '--call', 'toolu_cmd'], cli, 'y\n');
      expect(approved.code, approved.stderr).toBe(0);
      expect(approved.stdout).toMatch(/approved toolu_cmd \(run_command\)/);

      // At a terminal (script(1) gives it one) a long call goes through the pager first.
      const paged = path.join(tempDir('keel-pager-'), 'paged.txt');
      const line = [process.execPath, bin, 'approve', session.id, '--call', 'toolu_write'].map((a) => `'${a}'`).join(' ');
      const term = await run('sh', ['-c', `printf 'y\\n' | script -qec "stty rows 30 cols 100; ${line.replace(/"/g, '\\"')}" /dev/null`], {
        env: { ...cli, KEEL_PAGER: `cat > '${paged}'`, TERM: 'dumb' },
        timeout: 60_000,
      });
      const pagedText = await fs.readFile(paged, 'utf8');
      expect(pagedText).toContain('tool call toolu_write: write_file');
      expect(pagedText).toContain('--- /dev/null');
      expect(pagedText).toContain('+line 1\n');
      expect(pagedText).toContain('+THE-LAST-LINE');
      expect(term.stdout).toMatch(/approved toolu_write \(write_file\)/);
      // The pager showed the body; the terminal keeps only the header above the question.
      expect(term.stdout).not.toContain('+line 40');

      await waitUntil(() => session.state(), (st) => st.status === 'active', 30_000, 'turn done');
      expect(await fs.readFile(path.join(s.workspace, 'big.txt'), 'utf8')).toBe(CONTENT);
      const entries = (await session.log()).entries;
      const person = `keel cli (OS user ${os.userInfo().username})`;
      expect(entries.filter((e) => e.kind === 'tool.approved')).toEqual([
        expect.objectContaining({ callId: 'toolu_cmd', approver: person }),
        expect.objectContaining({ callId: 'toolu_write', approver: person }),
      ]);
    });
  });
});
