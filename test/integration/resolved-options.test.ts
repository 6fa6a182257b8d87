// A session's options are resolved once (workflows/session-options.ts) and carried through
// continue-as-new: the second run of a session started with no model, maxTokens or storeDir
// starts with the values the first run used, written into its input, and asks the model for
// the same. Before, the next run got the options as the client sent them and derived the
// defaults again (a default changed by a deployment in between would have changed a running
// session).
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeelClient } from '../../client/index';
import { workflowsPath } from '../../worker/worker';
import { resolveSessionOptions } from '../../workflows/session-options';
import type { SessionOptions } from '../../workflows/protocol/session';
import { recordHistory, say, sessionEnv, waitUntil } from '../fixtures/session-harness';
import { closeTestEnv } from '../fixtures/worker-teardown';
import { bundle, connectTestEnv, type TemporalTestEnv } from '../helpers/temporal';

let env: TemporalTestEnv;
let workflowBundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  env = await connectTestEnv();
  workflowBundle = await bundle(workflowsPath);
});

afterAll(async () => {
  await closeTestEnv(env);
});

describe('resolved options', () => {
  it('the second run of a session started with no model options starts with the first run’s resolved options and asks for the same model', async () => {
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        { match: { lastUserContains: 'first question' }, reply: say('First answer.') },
        { match: { lastUserContains: 'second question' }, reply: say('Second answer.') },
      ],
    });
    await s.run(async () => {
      const keel = await KeelClient.connect({ client: env.client, taskQueue: s.taskQueue });
      const session = await keel.startSession({ workspace: s.workspace, continueAsNewAfterTurns: 1 });
      expect((await session.send('first question')).outcome).toBe('completed');
      expect((await session.send('second question')).outcome).toBe('completed');
      // One turn a run: the quiet point after the second turn started run 3.
      await waitUntil(() => session.state(), (v) => v.run === 3, 30_000, 'run 3');

      const inputOf = async (runId?: string): Promise<{ input: SessionOptions; continuedFrom: string | null | undefined }> => {
        const history = await env.client.workflow.getHandle(session.id, runId).fetchHistory();
        const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
        return { input: JSON.parse(Buffer.from(started?.input?.payloads?.[0]?.data ?? []).toString('utf8')) as SessionOptions, continuedFrom: started?.continuedExecutionRunId };
      };
      const third = await inputOf();
      const second = await inputOf(third.continuedFrom!);
      const first = await inputOf(second.continuedFrom!);
      // The client named no model, output limit or store; run 2 was handed the resolved ones, and run 3 the same again.
      expect(first.input).not.toHaveProperty('model');
      expect(first.input).not.toHaveProperty('maxTokens');
      expect(second.input).toEqual(resolveSessionOptions(first.input));
      expect(second.input).toMatchObject({ model: 'claude-sonnet-4-6', maxTokens: 4096, storeDir: `${s.workspace}/.keel/store`, continueAsNewAfterTurns: 1 });
      expect(third.input).toEqual(second.input);
      // A run started from resolved options, for the replay test (with KEEL_RECORD_HISTORIES=1).
      await recordHistory(env.client.workflow.getHandle(session.id, third.continuedFrom!), 'resolved-options-run-2');

      // Run 1 asked the model with the defaults, and run 2 with the values it was handed.
      const asked = (words: string) => s.standin.requests.filter((r) => JSON.stringify(r.body).includes(words)).map((r) => r.body as { model: string; max_tokens: number });
      expect(asked('first question').map((b) => [b.model, b.max_tokens])[0]).toEqual(['claude-sonnet-4-6', 4096]);
      expect(asked('second question').map((b) => [b.model, b.max_tokens])).toEqual([[second.input.model, second.input.maxTokens]]);
      await session.close();
    });
  });
});
