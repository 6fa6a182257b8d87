// `always` in keel chat: it offers the rule it would remember, the person may keep or edit
// it, and it approves only what that rule covers — a later call of another tool is asked.
import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { KeelClient } from '../../client/index';
import { cliEnv, keelLive } from '../fixtures/client-cli';
import { say, sessionEnv, use } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();

describe('keel chat: always', () => {
  it('remembers the rule it showed (edited by the person), approves only what it covers, with the real approver', async () => {
    const s = await sessionEnv(
      env,
      workflowBundle,
      {
        rules: [
          { match: { lastUserContains: 'first', hasToolResults: false }, reply: use('run_command', { command: 'echo hello one' }, 'toolu_c1') },
          { match: { lastUserContains: 'second', hasToolResults: false }, reply: use('run_command', { command: 'echo hello two' }, 'toolu_c2') },
          { match: { lastUserContains: 'third', hasToolResults: false }, reply: use('write_file', { path: 'x.txt', content: 'x' }, 'toolu_w') },
          { match: { lastUserContains: 'fourth', hasToolResults: false }, reply: use('run_command', { command: 'echo bye' }, 'toolu_c3') },
          { match: { hasToolResults: true }, reply: say('Finished.') },
        ],
      },
      { ANTHROPIC_API_KEY: 'sk-ant-demo' },
    );
    await s.run(async () => {
      const chat = keelLive(['chat', '--workspace', s.workspace, '--mode', 'ask'], cliEnv(s.taskQueue));
      let id: string;
      try {
        id = (await chat.waitFor(/session (\S+) \(/))[1]!;
        chat.send('first');
        await chat.waitFor(/allow run_command.*\[y\/n\/always\]/);
        chat.send('always');
        await chat.waitFor(/remember for this session: run_command\(echo hello one\)/);
        // The person widens it on purpose.
        chat.send('run_command(echo hello*)');
        await chat.waitFor(/Finished\./);
        chat.send('second');
        await chat.waitFor(/Finished\.[^]*Finished\./);
        chat.send('third');
        await chat.waitFor(/allow write_file/);
        chat.send('n');
        await chat.waitFor(/Finished\.[^]*Finished\.[^]*Finished\./);
        chat.send('fourth');
        await chat.waitFor(/allow run_command[^]*allow run_command/);
        chat.send('y');
        await chat.waitFor(/(Finished\.[^]*){4}/);
        expect(await chat.end()).toBe(0);
      } finally {
        if (chat.child.exitCode === null) chat.child.kill();
      }
      const entries = (await (await KeelClient.connect({ client: env.client })).getSession(id).log()).entries;
      const asked = entries.filter((e) => e.kind === 'tool.approval_requested').map((e) => (e as { callId: string }).callId);
      expect(asked).toEqual(['toolu_c1', 'toolu_w', 'toolu_c3']);
      const approved = entries.filter((e) => e.kind === 'tool.approved') as unknown as { callId: string; approver: string; scope: string }[];
      const person = `keel chat (${os.userInfo().username})`;
      expect(approved).toEqual([
        expect.objectContaining({ callId: 'toolu_c1', approver: person, scope: 'session' }),
        expect.objectContaining({ callId: 'toolu_c3', approver: person, scope: 'once' }),
      ]);
      expect(entries.some((e) => e.kind === 'tool.denied' && (e as { callId?: string }).callId === 'toolu_w')).toBe(true);
    });
  });
});
