// `keel chat` shows how a turn ended when it did not simply finish: a refusal with the
// API's category and explanation, an answer cut at max_tokens.
import { describe, expect, it } from 'vitest';
import { cliEnv, keelLive } from '../fixtures/client-cli';
import { say, sessionEnv } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();

describe('keel chat turn outcomes', () => {
  it('shows a refusal with its category and explanation, and a truncated answer as truncated', async () => {
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        {
          match: { lastUserContains: 'forbidden' },
          reply: { content: [], stopReason: 'refusal', stopDetails: { category: 'cyber', explanation: 'This could enable malware.' } },
        },
        { match: { lastUserContains: 'long essay' }, reply: { ...say('The essay begins and then'), stopReason: 'max_tokens' } },
      ],
    });
    await s.run(async () => {
      const chat = keelLive(['chat', '--workspace', s.workspace], cliEnv(s.taskQueue));
      try {
        await chat.waitFor(/session (\S+) \(/);
        chat.send('do the forbidden thing');
        await chat.waitFor(/\[refused \(cyber\): This could enable malware\.\]/);
        chat.send('write a long essay');
        await chat.waitFor(/keel: The essay begins and then/);
        await chat.waitFor(/\[truncated at max_tokens 4096: the answer is incomplete\]/);
        chat.send('/close');
        expect(await chat.end()).toBe(0);
      } finally {
        if (chat.child.exitCode === null) chat.child.kill();
      }
    });
  });
});
