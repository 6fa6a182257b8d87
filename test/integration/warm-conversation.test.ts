// The conversation kept warm per session on the worker (activities/warm-conversations.ts) sends
// the model exactly what a cold rebuild from the store sends: one session with the warm copy and
// the same session with every call read from the store, over tool calls (a large result stored
// once among them), an interrupted command, a compaction and a rewind — request for request,
// byte for byte. The warm session sends every request from its messages' kept bytes
// (activities/request-bytes.ts; a real worker does past 256 KiB of conversation). The cases where the warm copy must not be used are in
// test/unit/warm-conversations.test.ts.
import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMPACTION_MARK } from '../../activities/conversation-compaction';
import { warmConversations } from '../../activities/warm-conversations';
import { Client } from '@temporalio/client';
import { KeelClient } from '../../client/index';
import { keelDataConverter } from '../../shared/encryption';
import { eventsQuery } from '../../workflows/definitions';
import { say, sessionEnv, use, waitUntil } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();

describe('a warm conversation per session', () => {
  it('sends the same requests as a cold rebuild, across tools, an interrupt, a compaction and a rewind', async () => {
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        { match: { lastUserContains: COMPACTION_MARK }, reply: say('Summary: files were read, a command was interrupted.') },
        { match: { lastUserContains: 'BIGFILE ONE' }, reply: say('Read the first.') },
        { match: { lastUserContains: 'BIGFILE TWO' }, reply: say('Read the second.') },
        { match: { lastUserContains: 'turn ONE' }, reply: use('read_file', { path: 'one.txt' }, 'toolu_warm_1', 'Reading one.') },
        { match: { lastUserContains: 'turn TWO' }, reply: use('run_command', { command: 'sleep 30' }, 'toolu_warm_2', 'Waiting.') },
        { match: { lastUserContains: 'turn THREE' }, reply: use('read_file', { path: 'two.txt' }, 'toolu_warm_3', 'Reading two.') },
        { match: {}, reply: say('Done.') },
      ],
    });
    await s.run(async () => {
      const rows = (tag: string) => `BIGFILE ${tag}\n${Array.from({ length: 300 }, (_, i) => `${tag} row ${i + 1}: ${'y'.repeat(50)}`).join('\n')}\n`;
      await fs.writeFile(path.join(s.workspace, 'one.txt'), rows('ONE'));
      await fs.writeFile(path.join(s.workspace, 'two.txt'), rows('TWO'));
      // Keel's client proves a human's rewind with the approver key (shared/approver-proof.ts).
      const proving = new Client({ connection: env.client.connection, namespace: env.namespace, dataConverter: await keelDataConverter(process.env) });
      const keel = await KeelClient.connect({ client: proving, taskQueue: s.taskQueue });

      const conversation = async (): Promise<string[]> => {
        const from = s.standin.requests.length;
        const session = await keel.startSession({ workspace: s.workspace, policy: { mode: 'full-auto' }, checkpoints: true, compactAboveTokens: 6_000 });
        expect((await session.send('turn ONE')).output).toBe('Read the first.');
        // The command is interrupted while it runs: its cancelled result goes into the conversation.
        const two = session.send('turn TWO');
        await waitUntil(
          async () => (await session.workflowHandle.query(eventsQuery, { from: 0, limit: 500 })).entries,
          (entries) => entries.some((e) => e.kind === 'tool.started' && e.callId === 'toolu_warm_2'),
          30_000,
          'the command to start',
        );
        await session.interrupt('enough');
        expect((await two).outcome).toBe('interrupted');
        expect((await session.send('turn THREE')).output).toBe('Read the second.');
        expect((await session.send('turn FOUR')).output).toBe('Done.');
        await session.rewind(2, { files: false });
        expect((await session.send('turn FIVE')).output).toBe('Done.');
        await session.close();
        return s.standin.requests.slice(from).map((r) => JSON.stringify(r.body));
      };

      const hits = warmConversations.hits;
      const keptSends = warmConversations.keptSends;
      const keepAbove = warmConversations.keepBytesAbove;
      warmConversations.keepBytesAbove = 0;
      let warm: string[];
      try {
        warm = await conversation();
      } finally {
        warmConversations.keepBytesAbove = keepAbove;
      }
      const warmHits = warmConversations.hits - hits;
      const sentKept = warmConversations.keptSends - keptSends;
      warmConversations.enabled = false;
      let cold: string[];
      try {
        cold = await conversation();
      } finally {
        warmConversations.enabled = true;
      }
      // The warm session took most calls from its warm copy; the cold one none.
      expect(warmHits).toBeGreaterThanOrEqual(3);
      expect(warmConversations.hits - hits).toBe(warmHits);
      // Every streamed call of the warm session went out from kept bytes (a compaction's summary
      // call is the SDK's own); the cold session's none.
      expect(sentKept).toBe(warm.filter((body) => body.includes('"stream":true')).length);
      expect(warmConversations.keptSends - keptSends).toBe(sentKept);
      // A compaction happened, and the rewind's call went back to an earlier head.
      expect(warm.some((body) => body.includes(COMPACTION_MARK))).toBe(true);
      expect(warm.at(-1)).toContain('turn FIVE');
      expect(warm.at(-1)).not.toContain('turn FOUR');
      expect(warm.join('\n')).toContain('TWO row 300:');
      expect(warm).toHaveLength(cold.length);
      for (let i = 0; i < warm.length; i++) expect(warm[i], `request ${i + 1}`).toBe(cold[i]);
    });
  });
});
