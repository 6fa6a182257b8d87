// A command stopped at a sandbox limit ends its tool call with the status `limit`, through a
// real worker, dev server and stand-in: the event log's tool.result says `limit` and which
// limit, the session's counts have it, and the model still reads what happened. Before,
// the call ended as a plain `error` and only the text said `[limit: …]`.
import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { toolResultLine, type Output } from '../../client/cli/output';
import type { ToolFacts } from '../../machines/tool-result';
import { userMessageUpdate } from '../../workflows/definitions';
import { probeSandbox } from '../../activities/tools/sandbox';
import { recordHistory, say, sessionEnv, use } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();

describe('a sandbox limit is a tool-call status', () => {
  it('a file larger than the limit ends the call as `limit` (file-size) in the event log and the counts; a plain failure stays `error`', async () => {
    expect(await probeSandbox()).toMatchObject({ ok: true });
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        { match: { lastUserContains: 'make it big', hasToolResults: false }, reply: use('run_command', { command: 'head -c 3000000 /dev/zero > big' }, 'toolu_big') },
        { match: { lastUserContains: 'just fail', hasToolResults: false }, reply: use('run_command', { command: 'exit 3' }, 'toolu_fail') },
        { match: { hasToolResults: true }, reply: say('Noted.') },
      ],
    });
    await s.run(async () => {
      const run = await s.start({ policy: { mode: 'full-auto', limits: { fileMiB: 1 } } });
      await run.handle.executeUpdate(userMessageUpdate, { args: ['make it big'] });
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 1, 60_000);
      await run.handle.executeUpdate(userMessageUpdate, { args: ['just fail'] });
      const state = await run.waitForState((v) => v.status === 'active' && v.session.turns === 2, 60_000);

      const results = (await run.log()).filter((e) => e.kind === 'tool.result') as unknown as { callId: string; status: string; output: string; facts?: ToolFacts }[];
      const big = results.find((r) => r.callId === 'toolu_big');
      expect(big).toMatchObject({ status: 'limit', facts: { kind: 'command', limit: 'file-size' } });
      expect(big?.output).toMatch(/\[limit: file size limit: 1 MiB/);
      expect(results.find((r) => r.callId === 'toolu_fail')).toMatchObject({ status: 'error' });
      expect(state.usage.toolCalls).toMatchObject({ limit: 1, error: 1, success: 0 });
      await recordHistory(run.handle, 'tool-limit');
      // The file never grew past the limit.
      expect((await fs.stat(path.join(s.workspace, 'big'))).size).toBeLessThanOrEqual(1024 * 1024);
      // The model reads an error result that says which limit stopped it.
      const seen = JSON.stringify(s.standin.requests.find((r) => JSON.stringify(r.body).includes('toolu_big') && JSON.stringify(r.body).includes('tool_result'))?.body);
      expect(seen).toMatch(/"is_error":true/);
      expect(seen).toMatch(/file size limit: 1 MiB/);

      // What `keel chat` prints for it: the status and the limit, not a bare ✘.
      const out = { yellow: (t: string) => t, dim: (t: string) => t } as unknown as Output;
      expect(toolResultLine(out, big!)).toMatch(/^ {2}⛔ limit \(file-size\): file size limit: 1 MiB/);
    });
  });
});
