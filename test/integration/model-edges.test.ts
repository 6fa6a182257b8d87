// The Messages API's edges, end to end through a real worker, the real SDK and the
// stand-in: a max_tokens stop inside a tool_use, a refusal, pause_turn, a call interrupted
// mid-stream and calls that keep failing — and that every billed token of each reaches
// the session's usage and its budget.
import { describe, expect, it } from 'vitest';
import { conversationProblems, type Message } from '../../machines/index';
import type { ModelStreamEvent } from '../../activities/llm';
import { interruptUpdate, MODEL_TOPIC, transcriptQuery, userMessageUpdate } from '../../workflows/definitions';
import { recordHistory, say, sessionEnv } from '../fixtures/session-harness';
import { followEventTopic } from '../helpers/temporal';
import { useTemporal } from '../fixtures/use-temporal';

const { env, workflowBundle } = useTemporal();

/** Exact usage, so the test can add it up (no prompt-cache split). */
const billed = (input: number, output: number) => ({ input_tokens: input, output_tokens: output, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
type Body = { max_tokens: number; messages: Message[] };
const bodies = (s: { standin: { requests: { body: unknown }[] } }) => s.standin.requests.map((r) => r.body as Body);
const FAST = { retryBackoffMs: [50, 50, 50] };

describe('model edges', () => {
  it('max_tokens inside a tool_use: one larger request, then the turn ends truncated; both requests counted', async () => {
    const cut = {
      content: [
        { type: 'text' as const, text: 'Writing the file now.' },
        { type: 'tool_use' as const, name: 'write_file', input: { path: 'big.txt', content: 'x'.repeat(400) }, cutAfterChars: 60 },
      ],
    };
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        { name: 'cut-1', match: { lastUserContains: 'write a big file' }, times: 1, reply: { ...cut, usage: billed(1_000, 300) } },
        { name: 'cut-2', match: { lastUserContains: 'write a big file' }, times: 1, reply: { ...cut, usage: billed(1_100, 600) } },
        { name: 'next', match: { lastUserContains: 'something small' }, reply: { ...say('Done.'), usage: billed(10, 2) } },
      ],
    });
    await s.run(async () => {
      const run = await s.start({ maxTokens: 300, ...FAST });
      await run.handle.executeUpdate(userMessageUpdate, { args: ['write a big file'] });
      const state = await run.waitForState((v) => v.status === 'active' && v.session.turns === 1);
      // At most 2 requests, the second with a larger limit (never the same request twice).
      expect(s.standin.requests).toHaveLength(2);
      expect(bodies(s).map((b) => b.max_tokens)).toEqual([300, 600]);
      // The usage of both is in the session's usage.
      expect(state.usage.usage).toMatchObject({ inputTokens: 2_100, outputTokens: 900 });
      const log = await run.log();
      expect(log.find((e) => e.kind === 'session.turn_finished')).toMatchObject({ outcome: 'truncated' });
      expect(log.filter((e) => e.kind === 'turn.continued')).toEqual([expect.objectContaining({ why: 'max_tokens', maxTokens: 600 })]);
      expect(log.find((e) => e.kind === 'turn.truncated')).toMatchObject({ inToolUse: true });
      expect(log.some((e) => e.kind === 'tool.call')).toBe(false);

      // The next request is valid: the broken tool_use never went back to the model.
      await run.handle.executeUpdate(userMessageUpdate, { args: ['something small'] });
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 2);
      const sent = bodies(s).at(-1)!.messages;
      expect(conversationProblems(sent)).toEqual([]);
      expect(JSON.stringify(sent)).not.toContain('tool_use');
      expect(JSON.stringify(sent)).toContain('Writing the file now.');
    });
  });

  it('a refusal ends the turn refused, with its category and explanation; nothing invented goes back', async () => {
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        {
          match: { lastUserContains: 'forbidden' },
          times: 1,
          reply: { content: [], stopReason: 'refusal', stopDetails: { category: 'cyber', explanation: 'This request could enable malware development.' }, usage: billed(50, 1) },
        },
        { match: { lastUserContains: 'something else' }, reply: say('Sure.') },
      ],
    });
    await s.run(async () => {
      const run = await s.start(FAST);
      await run.handle.executeUpdate(userMessageUpdate, { args: ['do the forbidden thing'] });
      const state = await run.waitForState((v) => v.status === 'active' && v.session.turns === 1);
      expect(state.usage.usage.inputTokens).toBe(50);
      const log = await run.log();
      expect(log.find((e) => e.kind === 'session.turn_finished')).toMatchObject({ outcome: 'refused' });
      expect(log.find((e) => e.kind === 'turn.refused')).toMatchObject({ category: 'cyber', explanation: 'This request could enable malware development.' });
      expect(s.standin.requests).toHaveLength(1);
      // The transcript shows it too: no message, and the refusal beside the messages.
      const transcript = await run.handle.query(transcriptQuery);
      expect(transcript.messages.filter((m) => m.role === 'assistant')).toEqual([]);
      expect(transcript.refusals).toMatchObject([{ category: 'cyber', explanation: 'This request could enable malware development.' }]);

      await run.handle.executeUpdate(userMessageUpdate, { args: ['something else then'] });
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 2);
      const sent = bodies(s).at(-1)!.messages;
      // Only the user spoke: no made-up assistant text such as "(no response)".
      expect(sent.filter((m) => m.role === 'assistant')).toEqual([]);
      expect(JSON.stringify(sent)).not.toContain('no response');
      expect(conversationProblems(sent)).toEqual([]);
    });
  });

  it('pause_turn: the paused answer goes back as it is and the model goes on', async () => {
    const s = await sessionEnv(env, workflowBundle, {
      rules: [
        { match: { request: 1 }, reply: { ...say('Searching…'), stopReason: 'pause_turn' } },
        { match: { request: 2 }, reply: say('Found it.') },
      ],
    });
    await s.run(async () => {
      const run = await s.start(FAST);
      await run.handle.executeUpdate(userMessageUpdate, { args: ['find it'] });
      await run.waitForState((v) => v.status === 'active' && v.session.turns === 1);
      expect(s.standin.requests).toHaveLength(2);
      const second = bodies(s)[1]!.messages;
      // As it came, with the rolling cache breakpoint on its last block (activities/llm-cache.ts).
      expect(second.at(-1)).toEqual({ role: 'assistant', content: [{ type: 'text', text: 'Searching…', cache_control: { type: 'ephemeral' } }] });
      expect((await run.log()).find((e) => e.kind === 'turn.completed')).toMatchObject({ finalOutput: 'Found it.', reason: 'end_turn' });
    });
  });

  it("an interrupted call's input and streamed output tokens are in usage (estimated, and marked so)", async () => {
    const long = 'Every step of a durable workflow is recorded in its history. '.repeat(40);
    const s = await sessionEnv(env, workflowBundle, {
      // Held after 28 pieces until the interrupt closes it: it cannot end first, however slow the machine.
      rules: [{ match: { lastUserContains: 'long story' }, reply: { ...say(long, { delayMs: 40, chunkSize: 8 }), usage: billed(700, 600) }, fault: { kind: 'hang' as const, afterEvents: 30 } }],
    });
    await s.run(async () => {
      const run = await s.start(FAST);
      await run.handle.executeUpdate(userMessageUpdate, { args: ['tell me a long story'] });
      // Let some of the answer stream: interrupt once deltas arrived.
      const model = followEventTopic<ModelStreamEvent>(env.client, run.handle.workflowId, MODEL_TOPIC);
      await model.waitFor((events) => events.some((e) => e.kind === 'delta'), 60_000);
      await run.handle.executeUpdate(interruptUpdate, { args: [{ reason: 'enough' }] });
      const state = await run.waitForState((v) => v.status === 'active' && v.session.turns === 1);
      const interrupted = (await run.log()).find((e) => e.kind === 'turn.interrupted') as { partialOutput: string | null } | undefined;
      const streamed = interrupted?.partialOutput ?? '';
      expect(streamed.length).toBeGreaterThan(0);
      expect(state.usage.usage.inputTokens).toBe(700);
      // Output estimated from what streamed (~4 characters a token), never the whole 600.
      expect(state.usage.usage.outputTokens).toBeGreaterThanOrEqual(Math.floor(streamed.length / 4));
      expect(state.usage.usage.outputTokens).toBeLessThan(600);
      expect(state.usage.usage.estimatedCalls).toBe(1);
    });
  });

  it("an interrupted call's output is counted until its connection closed: within 5 % of what the stand-in generated", async () => {
    // 30 s of answer at 4 characters (a token) every 10 ms: the interrupt comes long before its end.
    const long = 'Every step of a durable workflow is recorded in its history. '.repeat(200);
    const s = await sessionEnv(env, workflowBundle, { rules: [{ match: { lastUserContains: 'long story' }, reply: say(long, { delayMs: 10, chunkSize: 4 }) }] });
    await s.run(async () => {
      const run = await s.start(FAST);
      await run.handle.executeUpdate(userMessageUpdate, { args: ['tell me a long story'] });
      const model = followEventTopic<ModelStreamEvent>(env.client, run.handle.workflowId, MODEL_TOPIC);
      // Some way into the answer: the workflow's stream has ~120 tokens of it (~1.2 s), as the
      // issue's measure had (the stream then stayed open long enough for ~123 to be generated, 68 counted).
      await model.waitFor((events) => events.reduce((n, e) => n + (e.kind === 'delta' ? e.text.length : 0), 0) >= 480, 60_000);
      await run.handle.executeUpdate(interruptUpdate, { args: [{ reason: 'enough' }] });
      // The stand-in bills the stream as the API does: what it had generated when the client closed it.
      const closed = await s.standin.waitFor((r) => r.seq === 1 && r.closedAt !== null, 60_000);
      expect(closed.clientClosedEarly).toBe(true);
      const generated = closed.usage!.output_tokens;
      expect(generated).toBeLessThan(Math.ceil(long.length / 4) / 2);
      // The turn counts what its stream showed at the interrupt; the rest comes with the call's cancellation.
      const within = (v: { usage: { usage: { outputTokens: number } } }) => Math.abs(v.usage.usage.outputTokens - generated) <= 0.05 * generated;
      const state = await run.waitForState((v) => v.status === 'active' && v.session.turns === 1 && within(v), 30_000).catch(() => run.state());
      const counted = state.usage.usage.outputTokens;
      const log = await run.log();
      console.log(`interrupted call: ${counted} output tokens counted, ${generated} generated until the connection closed`);
      expect(counted / generated).toBeGreaterThanOrEqual(0.95);
      expect(counted / generated).toBeLessThanOrEqual(1.05);
      expect(state.usage.usage.estimatedCalls).toBe(1);
      expect(log.some((e) => e.kind === 'session.usage_settled')).toBe(true);
      // The settled usage is a new event in the workflow's history (runs recorded before replay without it).
      await recordHistory(run.handle, 'interrupt-settled-usage');
    });
  });

  it('calls that keep failing are counted, retried at most 3 times, and a budget stops them', async () => {
    const failing = {
      match: {},
      reply: { ...say('This answer breaks off before it is done, every time.'), usage: billed(100, 20) },
      fault: { kind: 'stream_error' as const, afterEvents: 4, errorType: 'overloaded_error' as const },
    };
    const s = await sessionEnv(env, workflowBundle, { rules: [failing] });
    await s.run(async () => {
      // No budget: 1 + 3 attempts for the whole call, never 16.
      const run = await s.start(FAST);
      await run.handle.executeUpdate(userMessageUpdate, { args: ['hello'] });
      const state = await run.waitForState((v) => v.session.turns === 1);
      expect(s.standin.requests).toHaveLength(4);
      expect(state.usage.usage.inputTokens).toBe(400);
      expect((await run.log()).find((e) => e.kind === 'session.turn_finished')).toMatchObject({ outcome: 'failed' });

      // A budget that leaves room for 250 input tokens beyond the request's estimate (the pre-call
      // ceiling sends only what fits it): three failed attempts of 100, and no fourth is made.
      const body = s.standin.requests[0]!.body as { system?: unknown; tools?: unknown; messages: unknown };
      const estimate = Math.ceil(JSON.stringify([body.system ?? '', body.tools ?? [], body.messages]).length / 4);
      const before = s.standin.requests.length;
      const limited = await s.start({ ...FAST, limits: { inputTokens: estimate + 250 } });
      await limited.handle.executeUpdate(userMessageUpdate, { args: ['hello'] });
      const stopped = await limited.waitForState((v) => v.status === 'suspended');
      expect(s.standin.requests.length - before).toBe(3);
      expect(stopped.usage.usage.inputTokens).toBe(300);
      expect((await limited.log()).find((e) => e.kind === 'session.turn_finished')).toMatchObject({ outcome: 'budget_exhausted' });
    });
  });
});
