// Long sessions: continue-as-new forced after 3 turns with everything preserved, and the
// history growth of a 60-turn session with 5 KB tool outputs (linear, not quadratic:
// the conversation travels to the model activity by reference).
import fs from 'node:fs/promises';
import path from 'node:path';
import proto, { type temporal } from '@temporalio/proto';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conversationProblems, type Message } from '../../machines/index';
import { workflowsPath } from '../../worker/worker';
import { approveUpdate, eventsQuery, pauseUpdate, resumeUpdate, transcriptQuery, userMessageUpdate } from '../../workflows/definitions';
import { recordHistory, say, sessionEnv, use } from '../fixtures/session-harness';
import { closeTestEnv } from '../fixtures/worker-teardown';
import { bundle, connectTestEnv, type TemporalTestEnv } from '../helpers/temporal';

const { HistoryEvent } = proto.temporal.api.history.v1;
/** Turns of the history-growth test (see there why 60 suffice). */
const TURNS = 60;

let env: TemporalTestEnv;
let workflowBundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  env = await connectTestEnv();
  workflowBundle = await bundle(workflowsPath);
});

afterAll(async () => {
  await closeTestEnv(env);
});

async function historyBytes(handle: { fetchHistory(): Promise<temporal.api.history.v1.IHistory> }): Promise<{ bytes: number; events: number; byType: Record<string, number> }> {
  const history = await handle.fetchHistory();
  const events = history.events ?? [];
  const byType: Record<string, number> = {};
  let bytes = 0;
  for (const event of events) {
    const size = HistoryEvent.encode(event).finish().length;
    const type = Object.keys(event).find((k) => k.endsWith('Attributes')) ?? 'other';
    byType[type] = (byType[type] ?? 0) + size;
    bytes += size;
  }
  return { bytes, events: events.length, byType };
}

describe('long sessions', () => {
  it('continues as new after 3 turns with machine state, conversation, queue, approvals and event offsets preserved', async () => {
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        { match: { lastUserContains: 'write the note', hasToolResults: false }, reply: use('write_file', { path: 'note.txt', content: 'v1' }) },
        { match: { lastUserContains: 'update the note', hasToolResults: false }, reply: use('write_file', { path: 'note.txt', content: 'v2' }) },
        { match: { hasToolResults: true }, reply: say('Noted.') },
        { match: { lastUserMatches: '^message \\d+$' }, reply: say('Fine.') },
      ],
    });
    await s.run(async () => {
      const run = await s.start({ policy: { mode: 'ask' }, continueAsNewAfterTurns: 3, idleTimeoutMs: 600_000 });
      const first = await run.handle.describe();
      await run.handle.executeUpdate(userMessageUpdate, { args: ['write the note'] });
      const waiting = await run.waitForState((v) => v.pendingApprovals.length === 1);
      // A rule, given explicitly: without one only the exact call (content v1) would be remembered.
      await run.handle.executeUpdate(approveUpdate, { args: [{ callId: waiting.pendingApprovals[0]!.callId, scope: 'session', rule: 'write_file(note.txt)' }] });
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 1);
      await run.handle.executeUpdate(userMessageUpdate, { args: ['message 2'] });
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 2);
      // Turn 3 runs; pause and queue a message: the run ends at the quiet point after it.
      await run.handle.executeUpdate(userMessageUpdate, { args: ['message 3'] });
      await run.handle.executeUpdate(pauseUpdate, { args: [{}] });
      await run.handle.executeUpdate(userMessageUpdate, { args: ['update the note'] });
      const carried = await run.waitForState((v) => v.run === 2, 120_000);
      const second = await run.handle.describe();
      expect(second.runId).not.toBe(first.runId);
      expect(carried).toMatchObject({ status: 'paused', queueLength: 1 });
      expect(carried.session.turns).toBe(3);
      expect(carried.usage.usage.outputTokens).toBeGreaterThan(0);
      const transcript = await run.handle.query(transcriptQuery, { from: 0, limit: 100 });
      expect(transcript.total).toBe(8);
      expect(transcript.head).toMatch(/^[0-9a-f]{64}$/);

      await run.handle.executeUpdate(resumeUpdate, { args: [{}] });
      const after = await run.waitForState((v) => v.status === 'active' && v.session.turns === 4, 120_000);
      expect(after.run).toBe(2);
      // The session approval survived: the rewrite ran without asking again.
      expect(await fs.readFile(path.join(s.workspace, 'note.txt'), 'utf8')).toBe('v2');
      // The model saw the whole conversation, rebuilt from the store by reference.
      const sent = s.standin.requests.at(-1)!.body as { messages: Message[] };
      expect(sent.messages).toHaveLength(11);
      expect(conversationProblems(sent.messages)).toEqual([]);
      expect(JSON.stringify(sent.messages[0])).toContain('write the note');

      // One event log across both runs: offsets continue, nothing twice, nothing lost.
      await run.events.waitFor((e) => e.filter((x) => x.kind === 'turn.completed').length === 4);
      const seqs = run.events.entries.map((e) => e.seq);
      expect(seqs).toEqual(seqs.map((_, i) => i));
      const page = await run.handle.query(eventsQuery, { from: 0, limit: 500 });
      expect(page.entries.map((e) => e.seq)).toEqual(seqs.slice(0, page.entries.length));
      expect(run.events.entries.filter((e) => e.kind === 'tool.approval_requested')).toHaveLength(1);
      expect(run.events.entries.filter((e) => e.kind === 'session.created')).toHaveLength(1);
      // Both runs: the first ends in continue-as-new, the second starts from its carry.
      await recordHistory(env.client.workflow.getHandle(run.handle.workflowId, first.runId), 'continue-as-new-run-1');
      await recordHistory(run.handle, 'continue-as-new-run-2');
    });
  });

  it('compacts older turns into a summary when the conversation nears the context window, and says so in the log', async () => {
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        { match: { lastUserContains: 'the conversation is being compacted' }, reply: say('SUMMARY: the user had big.txt read several times; it holds fox sentences.') },
        { match: { hasToolResults: false }, reply: use('read_file', { path: 'big.txt' }) },
        { match: { hasToolResults: true }, reply: say('Read it.') },
      ],
    });
    const line = 'The quick brown fox jumps over the lazy dog; keel keeps history linear.\n';
    await fs.writeFile(path.join(s.workspace, 'big.txt'), line.repeat(Math.ceil(5_000 / line.length)));
    await s.run(async () => {
      const run = await s.start({ compactAboveTokens: 3_000 });
      for (let turn = 1; turn <= 4; turn++) {
        await run.handle.executeUpdate(userMessageUpdate, { args: [`read it, turn ${turn}`] });
        await run.waitForState((v) => v.status === 'active' && v.session.turns === turn, 120_000);
      }
      const compacted = (await run.log()).filter((e) => e.kind === 'conversation.compacted');
      expect(compacted.length).toBeGreaterThanOrEqual(1);
      expect(compacted[0]).toMatchObject({ kind: 'conversation.compacted' });
      const first = compacted[0] as { fromMessages: number; toMessages: number; fromTokens: number; toTokens: number };
      expect(first.toMessages).toBeLessThan(first.fromMessages);
      expect(first.toTokens).toBeLessThan(first.fromTokens);
      // The model now sees the summary, then the newest turns; the request is valid.
      const sent = s.standin.requests.at(-1)!.body as { messages: Message[] };
      expect(JSON.stringify(sent.messages[0])).toContain('SUMMARY: the user had big.txt read');
      expect(sent.messages.length).toBeLessThan(15);
      expect(conversationProblems(sent.messages)).toEqual([]);
      // People still see every message.
      const transcript = await run.handle.query(transcriptQuery, { from: 0, limit: 100 });
      expect(transcript.total).toBe(16);
      expect(JSON.stringify(transcript.messages[0])).toContain('read it, turn 1');
    });
  });

  // 60 turns, not 100 (each turn is ~0.4 s of Temporal round trips; 100 were 40+ s of this
  // file). A turn adds ~35 KB of history; growth that depends on the conversation adds k bytes
  // per earlier turn to each new one. The single-turn check (turn N within 2× of turn 10)
  // catches k > 35 KB / (N - 20): 445 B at N = 100, 890 B at N = 60. So at 60 turns a second,
  // stricter check is added on 5-turn means (less noisy than single turns): the mean of turns
  // 56-60 within 1.5× of turns 6-10's, which catches k > ~390 B — at least what 100 turns
  // caught. The conversation inline (temporalio/sdk-python#1890) adds > 5 KB per earlier turn.
  // `npm run bench:history [turns]` prints the growth of a longer session (100 by default).
  it(`a ${TURNS}-turn session with 5 KB tool outputs grows history linearly (bytes per turn at turn ${TURNS} within 2× of turn 10, 5-turn means within 1.5×)`, async () => {
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        { match: { hasToolResults: false }, reply: use('read_file', { path: 'big.txt' }, undefined, 'Reading.') },
        { match: { hasToolResults: true }, reply: say('Read it.') },
      ],
    });
    const line = 'The quick brown fox jumps over the lazy dog; keel keeps history linear.\n';
    await fs.writeFile(path.join(s.workspace, 'big.txt'), line.repeat(Math.ceil(5_000 / line.length)));
    await s.run(async () => {
      const run = await s.start({ continueAsNewWhenSuggested: false });
      const at: Record<number, Awaited<ReturnType<typeof historyBytes>>> = { 0: await historyBytes(run.handle) };
      const N = TURNS;
      const half = N / 2;
      for (let turn = 1; turn <= N; turn++) {
        await run.handle.executeUpdate(userMessageUpdate, { args: [`turn ${turn}`] });
        await run.waitForState((v) => v.status === 'active' && v.session.turns === turn, 120_000);
        if ([5, 9, 10, 11, half, N - 5, N - 1, N].includes(turn)) at[turn] = await historyBytes(run.handle);
      }
      const state = await run.state();
      expect(state.run).toBe(1);
      expect(state.usage.toolCalls.success).toBe(N);
      const per10 = at[10]!.bytes - at[9]!.bytes;
      const per11 = at[11]!.bytes - at[10]!.bytes;
      const perLast = at[N]!.bytes - at[N - 1]!.bytes;
      const avgLate = (at[N]!.bytes - at[half]!.bytes) / (N - half);
      const meanEarly = (at[10]!.bytes - at[5]!.bytes) / 5;
      const meanLate = (at[N]!.bytes - at[N - 5]!.bytes) / 5;
      console.log(
        [
          `history growth, ${N} turns, read_file of 5 KB each turn (bytes of encoded history events):`,
          `  after turn 10: ${at[10]!.bytes} B (${at[10]!.events} events); after turn ${N}: ${at[N]!.bytes} B (${at[N]!.events} events)`,
          `  added by turn 10: ${per10} B, turn 11: ${per11} B, turn ${N}: ${perLast} B (ratio ${(perLast / per10).toFixed(2)})`,
          `  mean per turn over turns 6-10: ${meanEarly.toFixed(0)} B, over turns ${N - 4}-${N}: ${meanLate.toFixed(0)} B (ratio ${(meanLate / meanEarly).toFixed(2)}), over turns ${half + 1}-${N}: ${avgLate.toFixed(0)} B`,
        ].join('\n'),
      );
      const breakdown = Object.entries(at[N]!.byType)
        .map(([type, bytes]) => [type.replace(/EventAttributes$/, ''), bytes - (at[N - 1]!.byType[type] ?? 0)] as const)
        .filter(([, bytes]) => bytes > 0)
        .sort((a, b) => b[1] - a[1]);
      console.log(`  turn ${N} by event type: ${breakdown.map(([t, b]) => `${t} ${b} B`).join(', ')}`);
      expect(perLast).toBeLessThanOrEqual(2 * per10);
      expect(perLast).toBeGreaterThan(5_000);
      expect(meanLate).toBeLessThanOrEqual(1.5 * meanEarly);
      // The last model call still saw the whole conversation (4 messages a turn, less the last answer).
      const sent = s.standin.requests.at(-1)!.body as { messages: Message[] };
      expect(sent.messages).toHaveLength(4 * N - 1);
    });
    // The work is fixed (60 turns, ~25 s idle), its time is not: at load 30 it passed the
    // file's 120 s. What it asserts is bytes, not speed, so it may take what the machine needs.
  }, 600_000);
});
