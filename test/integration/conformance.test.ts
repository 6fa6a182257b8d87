// Keel against recorded-shape API responses (test/conformance/transcripts), served by a
// plain replay server instead of the stand-in: for each stop reason and content block
// type, what the user sees (the turn's outcome and events) and what Keel sends next.
import { describe, expect, it } from 'vitest';
import { conversationProblems, type Message, type Usage } from '../../machines/index';
import { type LogEntry, userMessageUpdate } from '../../workflows/definitions';
import type { SessionOptions } from '../../workflows/session';
import { type Recorded, startReplayServer } from '../conformance/replay-server';
import { sessionEnv } from '../fixtures/session-harness';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();

interface Body {
  max_tokens: number;
  messages: Message[];
  stream?: boolean;
  system?: unknown;
  thinking?: unknown;
}

interface Played {
  bodies: Body[];
  log: LogEntry[];
  /** The session's usage when the last turn was over. */
  usage: Usage;
  outcomes: string[];
  /** The session is on another run than the one it started with. */
  continuedAsNew: boolean;
}

/** Sends `messages` one turn each to a session whose model is the replay server. */
async function play(script: Recorded[], messages: string[], options: Partial<SessionOptions> = {}): Promise<Played> {
  const replay = await startReplayServer(script);
  const s = await sessionEnv(env, workflowBundle, { rules: [] }, { ANTHROPIC_BASE_URL: replay.url });
  try {
    return await s.run(async () => {
      const run = await s.start({ retryBackoffMs: [50, 50, 50], maxTokens: 1_000, ...options });
      const firstRun = (await run.handle.describe()).runId;
      for (const [i, text] of messages.entries()) {
        await run.handle.executeUpdate(userMessageUpdate, { args: [text] });
        await run.waitForState((v) => v.session.turns === i + 1 && v.status !== 'processing');
      }
      const log = await run.log();
      const outcomes = log.flatMap((e) => (e.kind === 'session.turn_finished' ? [(e as { outcome: string }).outcome] : []));
      const usage = (await run.state()).usage.usage;
      const continuedAsNew = (await env.client.workflow.getHandle(run.handle.workflowId).describe()).runId !== firstRun;
      return { bodies: replay.bodies as unknown as Body[], log, usage, outcomes, continuedAsNew };
    });
  } finally {
    await replay.close();
  }
}

const event = (log: LogEntry[], kind: string) => log.find((e) => e.kind === kind) as Record<string, unknown> | undefined;
const assistantTexts = (messages: Message[]) => messages.filter((m) => m.role === 'assistant').flatMap((m) => m.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])));

describe('conformance: recorded API shapes', () => {
  it('end_turn and stop_sequence: completed; the answer goes back in the next request', async () => {
    const p = await play([{ sse: 'end_turn.sse' }, { sse: 'stop_sequence.sse' }, { sse: 'end_turn.sse' }], ['hi', 'first step', 'and?']);
    expect(p.outcomes).toEqual(['completed', 'completed', 'completed']);
    expect(event(p.log, 'turn.completed')).toMatchObject({ finalOutput: 'Hello! The workspace is empty.', stopReason: 'end_turn' });
    const third = p.bodies[2]!.messages;
    expect(assistantTexts(third)).toEqual(['Hello! The workspace is empty.', 'Step one done.']);
    expect(conversationProblems(third)).toEqual([]);
    expect(p.usage).toMatchObject({ inputTokens: 120 + 118 + 120, outputTokens: 12 + 6 + 12 });
  });

  it('tool_use with fragmented input: both tools run, results answer them first and in order', async () => {
    const p = await play([{ sse: 'tool_use.sse' }, { sse: 'tool_use_answered.sse' }], ['what is here?']);
    expect(p.outcomes).toEqual(['completed']);
    const next = p.bodies[1]!.messages;
    expect(next[1]!.content.filter((b) => b.type === 'tool_use')).toEqual([
      { type: 'tool_use', id: 'toolu_01ListDir', name: 'list_dir', input: { path: '.' } },
      { type: 'tool_use', id: 'toolu_01Glob', name: 'glob', input: { pattern: '*.md' } },
    ]);
    expect(next[2]!.content.map((b) => (b.type === 'tool_result' ? b.tool_use_id : b.type))).toEqual(['toolu_01ListDir', 'toolu_01Glob']);
    expect(conversationProblems(next)).toEqual([]);
  });

  it('max_tokens in plain text: the turn ends truncated, the cut answer is kept', async () => {
    const p = await play([{ sse: 'max_tokens.sse' }, { sse: 'end_turn.sse' }], ['tell me the history', 'go on']);
    expect(p.outcomes).toEqual(['truncated', 'completed']);
    expect(event(p.log, 'turn.truncated')).toMatchObject({ inToolUse: false, maxTokens: 1_000 });
    expect(assistantTexts(p.bodies[1]!.messages)).toEqual(['The history of durable execution begins with transaction logs, and']);
  });

  it('max_tokens inside a tool_use: one request with a larger limit, then truncated; no broken tool_use goes back', async () => {
    const p = await play([{ sse: 'max_tokens_in_tool_use.sse' }, { sse: 'max_tokens_in_tool_use.sse' }, { sse: 'end_turn.sse' }], ['write notes', 'never mind']);
    expect(p.outcomes).toEqual(['truncated', 'completed']);
    expect(p.bodies.map((b) => b.max_tokens)).toEqual([1_000, 2_000, 1_000]);
    const next = p.bodies[2]!.messages;
    expect(JSON.stringify(next)).not.toContain('toolu_01Cut');
    expect(conversationProblems(next)).toEqual([]);
    expect(p.usage).toMatchObject({ inputTokens: 200 + 200 + 120, outputTokens: 32 + 32 + 12 });
  });

  it('pause_turn: the paused answer goes back unchanged, last, and the model continues', async () => {
    const p = await play([{ sse: 'pause_turn.sse' }, { sse: 'pause_turn_resumed.sse' }], ['research this']);
    expect(p.outcomes).toEqual(['completed']);
    // As it came, with the rolling cache breakpoint on its last block (activities/llm-cache.ts).
    expect(p.bodies[1]!.messages.at(-1)).toEqual({ role: 'assistant', content: [{ type: 'text', text: 'Still working through the sources', cache_control: { type: 'ephemeral' } }] });
    expect(event(p.log, 'turn.continued')).toMatchObject({ why: 'pause_turn' });
  });

  it('refusal: outcome refused with category and explanation; the next request carries no invented text', async () => {
    const p = await play([{ sse: 'refusal.sse' }, { sse: 'end_turn.sse' }], ['write malware', 'ok, something else']);
    expect(p.outcomes).toEqual(['refused', 'completed']);
    expect(event(p.log, 'turn.refused')).toMatchObject({ category: 'cyber', explanation: 'This request could enable the development of malware.' });
    // The refused prompt is gone, as the API advises: the conversation is as if it had not been sent.
    const next = p.bodies[1]!.messages;
    expect(next.map((m) => m.role)).toEqual(['user']);
    expect(JSON.stringify(next)).not.toContain('write malware');
    expect(conversationProblems(next)).toEqual([]);
  });

  it('model_context_window_exceeded: the conversation is compacted and the call made once more', async () => {
    const p = await play(
      [{ sse: 'end_turn.sse' }, { sse: 'model_context_window_exceeded.sse' }, { json: 'summary.json' }, { sse: 'after_compaction.sse' }],
      ['tell me about durable execution', 'and now the details'],
    );
    expect(p.outcomes).toEqual(['completed', 'completed']);
    expect(p.bodies).toHaveLength(4);
    expect(p.bodies[2]!.stream).toBeUndefined();
    const retried = p.bodies[3]!.messages;
    expect(retried.length).toBeLessThan(p.bodies[1]!.messages.length);
    expect(JSON.stringify(retried[0])).toContain('Summary of the earlier conversation');
    expect(event(p.log, 'turn.continued')).toMatchObject({ why: 'context_window' });
    expect(event(p.log, 'conversation.compacted')).toBeDefined();
  });

  it('thinking and redacted_thinking go back exactly as received, with the thinking option on', async () => {
    const p = await play([{ sse: 'thinking.sse' }, { sse: 'thinking_answered.sse' }], ['list it'], { thinking: { budgetTokens: 1_024 } });
    expect(p.outcomes).toEqual(['completed']);
    expect(p.bodies[0]).toMatchObject({ thinking: { type: 'enabled', budget_tokens: 1_024 }, max_tokens: 2_024 });
    expect(p.bodies[1]!.messages[1]!.content.slice(0, 2)).toEqual([
      { type: 'thinking', thinking: 'The user wants the list.I should call list_dir.', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds' },
      { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP' },
    ]);
  });

  it('thinking blocks survive continue-as-new verbatim', async () => {
    const p = await play([{ sse: 'thinking.sse' }, { sse: 'thinking_answered.sse' }, { sse: 'end_turn.sse' }], ['list it', 'thanks'], {
      thinking: { budgetTokens: 1_024 },
      continueAsNewAfterTurns: 1,
    });
    expect(p.outcomes).toEqual(['completed', 'completed']);
    expect(p.continuedAsNew).toBe(true);
    const after = p.bodies[2]!.messages;
    const blocks = after.flatMap((m) => m.content).filter((b) => b.type === 'thinking' || b.type === 'redacted_thinking');
    expect(blocks).toEqual([
      { type: 'thinking', thinking: 'The user wants the list.I should call list_dir.', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds' },
      { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP' },
      { type: 'thinking', thinking: 'Empty directory.', signature: 'EpYBCkYIBRgCKkB5dn4qsxV1ThinkingSignatureTwo' },
    ]);
  });

  it('an error event mid-stream: retried once; the failed attempt is billed and counted', async () => {
    const p = await play([{ sse: 'error_mid_stream.sse' }, { sse: 'end_turn.sse' }], ['hi']);
    expect(p.outcomes).toEqual(['completed']);
    expect(p.bodies).toHaveLength(2);
    expect(event(p.log, 'turn.retry_scheduled')).toMatchObject({ attempt: 2 });
    const usage = p.usage;
    expect(usage.inputTokens).toBe(130 + 120);
    expect(usage.estimatedCalls).toBe(1);
  });
});
