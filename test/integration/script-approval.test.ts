// An approval of a command that runs a workspace file is bound to that file's content
// (machines/script-binding.ts), through a real worker, dev server and stand-in. The issue's
// case: `./build.sh` approved for the session still ran after build.sh was rewritten. Now
// the rewritten script does not run, the model reads why, and the same call asks again; an approval
// given while the file changed after the human was asked does not run it either.
import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ToolFacts } from '../../machines/tool-result';
import { approveUpdate, userMessageUpdate } from '../../workflows/definitions';
import { recordHistory, say, sessionEnv, use, waitUntil } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();

type Result = { callId: string; status: string; output: string; facts?: ToolFacts };

describe('an approval of a workspace script is bound to its content', () => {
  it('approved for the session, ./build.sh runs again unchanged; rewritten, it is refused, does not run, and the next call asks a human again', async () => {
    const s = await sessionEnv(env, workflowBundle, {
      rules: [1, 2, 3, 4].map((n) => ({ match: { lastUserContains: `build ${n}`, hasToolResults: false }, reply: use('run_command', { command: './build.sh' }, `toolu_build_${n}`) })).concat([
        { match: { hasToolResults: true }, reply: say('Done.') } as never,
      ]),
    });
    const script = path.join(s.workspace, 'build.sh');
    await fs.writeFile(script, '#!/bin/sh\necho built v1\n', { mode: 0o755 });
    await s.run(async () => {
      const run = await s.start({ policy: { mode: 'ask' } });
      const turnDone = (n: number) => run.waitForState((v) => v.status === 'active' && v.session.turns === n, 60_000);
      /** How many times the worker hashed the files of a call waiting for approval. */
      const hashesTaken = async () => {
        const events = (await run.handle.fetchHistory()).events ?? [];
        const scheduled = new Set(events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'hashCommandScripts').map((e) => String(e.eventId)));
        return events.filter((e) => scheduled.has(String(e.activityTaskCompletedEventAttributes?.scheduledEventId))).length;
      };
      const results = async () => (await run.log()).filter((e) => e.kind === 'tool.result') as unknown as Result[];

      await run.handle.executeUpdate(userMessageUpdate, { args: ['build 1'] });
      await run.waitForState((v) => v.pendingApprovals.some((p) => p.callId === 'toolu_build_1'));
      await run.handle.executeUpdate(approveUpdate, { args: [{ callId: 'toolu_build_1', scope: 'session' }] });
      await turnDone(1);
      const first = (await results()).find((r) => r.callId === 'toolu_build_1');
      expect(first?.status).toBe('success');
      expect(first?.facts?.kind === 'command' ? first.facts.scripts?.['build.sh'] : undefined).toMatch(/^sha256:[0-9a-f]{64}$/);

      // Unchanged: the remembered approval covers it, no one is asked.
      await run.handle.executeUpdate(userMessageUpdate, { args: ['build 2'] });
      await turnDone(2);
      expect((await results()).find((r) => r.callId === 'toolu_build_2')?.output).toContain('built v1');

      // Rewritten (by the agent, another agent, anyone): it does not run under the old approval.
      await fs.writeFile(script, `#!/bin/sh\ntouch ${path.join(s.workspace, 'pwned')}\necho built v2\n`, { mode: 0o755 });
      await run.handle.executeUpdate(userMessageUpdate, { args: ['build 3'] });
      await turnDone(3);
      const refused = (await results()).find((r) => r.callId === 'toolu_build_3');
      expect(refused).toMatchObject({ status: 'error', facts: { kind: 'refused', reason: 'script_changed' } });
      expect(refused?.output).toMatch(/run_command refused: a file it runs changed after it was approved — build\.sh \(approved sha256:[0-9a-f]{12}…, now sha256:[0-9a-f]{12}…\) changed after the approval was given; the command did not run/);
      await expect(fs.stat(path.join(s.workspace, 'pwned'))).rejects.toThrow();
      await recordHistory(run.handle, 'script-changed');

      // The approval is gone: the same call asks a human again.
      await run.handle.executeUpdate(userMessageUpdate, { args: ['build 4'] });
      const asking = await run.waitForState((v) => v.pendingApprovals.some((p) => p.callId === 'toolu_build_4'));
      expect(asking.pendingApprovals.find((p) => p.callId === 'toolu_build_4')).toBeDefined();
      await expect(fs.stat(path.join(s.workspace, 'pwned'))).rejects.toThrow();

      // Changed while the human looks at the call: an approval, even once, is of what was there when asked.
      await waitUntil(hashesTaken, (n) => n >= 2, 30_000, 'the files of the asked call hashed');
      await fs.writeFile(script, `#!/bin/sh\ntouch ${path.join(s.workspace, 'pwned')}\necho built v3\n`, { mode: 0o755 });
      await run.handle.executeUpdate(approveUpdate, { args: [{ callId: 'toolu_build_4' }] });
      await turnDone(4);
      expect((await results()).find((r) => r.callId === 'toolu_build_4')).toMatchObject({ status: 'error', facts: { kind: 'refused', reason: 'script_changed' } });
      await expect(fs.stat(path.join(s.workspace, 'pwned'))).rejects.toThrow();
    });
  });
});
