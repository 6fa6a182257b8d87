import { describe, expect, it } from 'vitest';
import {
  conversationProblems,
  type CallUsage,
  createTurn,
  pendingApprovals,
  turnMachine,
  type ContentBlock,
  type Message,
  type NewTurn,
  type TurnDirective,
  type TurnEvent,
  type TurnState,
} from '../../../machines/index';
import { accepted, events, kinds, ofType } from './helpers';

const usage = { inputTokens: 100, outputTokens: 20, costUsd: 0.01 };
const toolUse = (id: string, name: string, input: Record<string, string> = { path: 'a.ts' }): ContentBlock => ({
  type: 'tool_use',
  id,
  name,
  input,
});
const respond = (content: ContentBlock[], u: CallUsage = usage): TurnEvent => ({ type: 'model_response', content, stopReason: content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn', usage: u });
const text = (t: string): ContentBlock => ({ type: 'text', text: t });
const tool = (callId: string, event: Extract<TurnEvent, { type: 'tool' }>['event']): TurnEvent => ({ type: 'tool', callId, event });

/** Feeds events in order, like the workflow, keeping the conversation it would store. */
class Driver {
  state: TurnState;
  readonly conversation: Message[] = [];
  readonly directives: TurnDirective[] = [];
  constructor(init: Partial<NewTurn> = {}) {
    this.state = createTurn({ turnId: 't1', readOnlyTools: ['read_file', 'grep'], askTool: 'ask_user', maxParallelTools: 2, ...init });
  }
  send(...evs: TurnEvent[]): readonly TurnDirective[] {
    const out: TurnDirective[] = [];
    for (const ev of evs) {
      const r = accepted(turnMachine.transition(this.state, ev));
      this.state = r.state;
      out.push(...r.directives);
      for (const d of r.directives) if (d.type === 'append_messages') this.conversation.push(...d.messages);
    }
    this.directives.push(...out);
    return out;
  }
  /** What the next turn would send: the conversation plus a new user message. */
  nextRequestProblems(): string[] {
    return conversationProblems([...this.conversation, { role: 'user', content: [text('next')] }]);
  }
}

describe('turn machine', () => {
  it('runs the seed 000 tool flow: think, call tools, think again, complete', () => {
    const t = new Driver();
    const start = t.send({ type: 'start', text: 'fix the bug' });
    expect(t.state).toMatchObject({ status: 'calling_llm', step: 1, attempt: 1 });
    expect(ofType(start, 'call_model')).toEqual([{ type: 'call_model', turnId: 't1', step: 1, attempt: 1, activityId: 'model:t1:1:1' }]);

    const asked = t.send(respond([text('Let me look.'), toolUse('tu1', 'read_file')]));
    expect(t.state.status).toBe('executing_tools');
    expect(kinds(asked)).toEqual(['turn.tool_calls_received', 'tool.call']);
    expect(ofType(asked, 'check_policy')).toEqual([{ type: 'check_policy', callId: 'tu1', name: 'read_file', input: { path: 'a.ts' } }]);

    const allowed = t.send(tool('tu1', { type: 'policy_decided', decision: 'allow' }));
    expect(ofType(allowed, 'run_tool')).toEqual([{ type: 'run_tool', callId: 'tu1', activityId: 'tool:tu1', name: 'read_file', input: { path: 'a.ts' } }]);

    const done = t.send(tool('tu1', { type: 'succeeded', output: 'const a = 1;' }));
    expect(t.state).toMatchObject({ status: 'calling_llm', step: 2 });
    expect(ofType(done, 'append_messages')[0]?.messages).toEqual([
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu1', content: 'const a = 1;', is_error: false }] },
    ]);
    expect(conversationProblems(t.conversation)).toEqual([]);

    const end = t.send(respond([text('Fixed it.')]));
    expect(t.state).toMatchObject({ status: 'completed', reason: 'end_turn' });
    expect(ofType(end, 'finish')[0]?.result).toMatchObject({ outcome: 'completed', steps: 2, finalOutput: 'Fixed it.', toolCalls: { success: 1 }, usage: { inputTokens: 200, outputTokens: 40 } });
    expect(t.nextRequestProblems()).toEqual([]);
  });

  it('retries an overloaded model after 1 s, 2 s and 3 s, then gives up with an error the user sees', () => {
    const t = new Driver();
    t.send({ type: 'start', text: 'hi' });
    const delays: number[] = [];
    for (let attempt = 1; attempt <= 3; attempt++) {
      const failed = t.send({ type: 'model_failed', message: '529 overloaded', retryable: true });
      const timer = ofType(failed, 'start_timer')[0];
      delays.push(timer?.durationMs ?? -1);
      expect(t.state.status).toBe('retry_wait');
      const again = t.send({ type: 'timer_fired', timerId: timer?.timerId ?? '' });
      expect(ofType(again, 'call_model')[0]).toMatchObject({ step: 1, attempt: attempt + 1 });
    }
    expect(delays).toEqual([1_000, 2_000, 3_000]);
    const gaveUp = t.send({ type: 'model_failed', message: '529 overloaded', retryable: true });
    expect(t.state.status).toBe('failed');
    expect(events(gaveUp)).toContainEqual({ kind: 'turn.error', turnId: 't1', errorType: 'retries_exhausted', message: '529 overloaded', attempts: 4 });
    expect(ofType(gaveUp, 'finish')[0]?.result).toMatchObject({ outcome: 'failed', error: 'the model failed 4 times: 529 overloaded' });
    expect(t.nextRequestProblems()).toEqual([]);
  });

  it('honours a longer retry-after and fails at once on a non-retryable error', () => {
    const t = new Driver();
    t.send({ type: 'start', text: 'hi' });
    expect(ofType(t.send({ type: 'model_failed', message: '429', retryable: true, retryAfterMs: 7_500 }), 'start_timer')[0]?.durationMs).toBe(7_500);
    const stale = turnMachine.transition(t.state, { type: 'timer_fired', timerId: 'retry:other' });
    expect(stale.ok).toBe(false);
    if (!stale.ok) expect(stale.error).toMatchObject({ code: 'guard_failed', state: 'retry_wait', event: 'timer_fired' });

    const u = new Driver();
    u.send({ type: 'start', text: 'hi' });
    u.send({ type: 'model_failed', message: '401 invalid x-api-key', retryable: false });
    expect(u.state).toMatchObject({ status: 'failed', error: '401 invalid x-api-key' });
  });

  it('on interrupt, cancels running work and answers every unfinished call with `cancelled`', () => {
    const t = new Driver({ approvalTimeoutMs: 60_000 });
    t.send({ type: 'start', text: 'go' });
    t.send(respond([toolUse('a', 'read_file'), toolUse('b', 'grep'), toolUse('c', 'write_file')]));
    t.send(tool('a', { type: 'policy_decided', decision: 'allow' }), tool('b', { type: 'policy_decided', decision: 'allow' }));
    t.send(tool('a', { type: 'succeeded', output: 'A' }), tool('c', { type: 'policy_decided', decision: 'ask', reason: 'writes ask' }));
    expect(pendingApprovals(t.state)).toEqual([{ callId: 'c', name: 'write_file', input: { path: 'a.ts' }, reason: 'writes ask' }]);

    const out = t.send({ type: 'interrupt', reason: 'user pressed Esc' });
    expect(t.state).toMatchObject({ status: 'interrupted', reason: 'user pressed Esc' });
    expect(ofType(out, 'cancel_activity')).toEqual([{ type: 'cancel_activity', activityId: 'tool:b' }]);
    expect(ofType(out, 'cancel_timer')).toEqual([{ type: 'cancel_timer', timerId: 'approval:c' }]);
    const results = ofType(out, 'append_messages')[0]?.messages[0]?.content;
    expect(results?.map((b) => (b.type === 'tool_result' ? [b.tool_use_id, b.is_error] : null))).toEqual([
      ['a', false],
      ['b', true],
      ['c', true],
    ]);
    expect(events(out).filter((e) => e.kind === 'tool.result').map((e) => (e.kind === 'tool.result' ? e.status : ''))).toEqual(['cancelled', 'cancelled']);
    expect(ofType(out, 'finish')[0]?.result).toMatchObject({ outcome: 'interrupted', toolCalls: { success: 1, cancelled: 2 } });
    expect(t.nextRequestProblems()).toEqual([]);
    // A result arriving after the interrupt is refused, not applied.
    expect(turnMachine.transition(t.state, tool('b', { type: 'succeeded', output: 'late' })).ok).toBe(false);
  });

  it('keeps the partial answer when interrupted while the model streams', () => {
    const t = new Driver();
    t.send({ type: 'start', text: 'write a poem' });
    const out = t.send({ type: 'interrupt', partialText: 'Roses are' });
    expect(ofType(out, 'cancel_activity')).toEqual([{ type: 'cancel_activity', activityId: 'model:t1:1:1' }]);
    expect(t.conversation.at(-1)).toEqual({ role: 'assistant', content: [text('Roses are')] });
    expect(events(out)).toContainEqual({ kind: 'turn.interrupted', turnId: 't1', reason: 'interrupted by the user', partialOutput: 'Roses are' });
    expect(t.nextRequestProblems()).toEqual([]);
  });

  it('applies a steer at the next safe boundary without losing the work', () => {
    const t = new Driver();
    t.send({ type: 'start', text: 'refactor' });
    t.send(respond([toolUse('a', 'read_file')]));
    t.send({ type: 'steer', text: 'keep the public API' });
    expect(t.state.status).toBe('executing_tools');
    t.send(tool('a', { type: 'policy_decided', decision: 'allow' }));
    const boundary = t.send(tool('a', { type: 'succeeded', output: 'code' }));
    // Tool results first (the API requires it), then the steer, in one user message.
    expect(ofType(boundary, 'append_messages')[0]?.messages).toEqual([
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'a', content: 'code', is_error: false }, text('keep the public API')] },
    ]);
    expect(kinds(boundary)).toContain('turn.steer_applied');

    // A steer during the last model call makes the model answer it before the turn ends.
    t.send({ type: 'steer', text: 'and add a test' });
    const again = t.send(respond([text('Done.')]));
    expect(t.state).toMatchObject({ status: 'calling_llm', step: 3 });
    expect(ofType(again, 'append_messages').flatMap((d) => d.messages).at(-1)).toEqual({ role: 'user', content: [text('and add a test')] });
    expect(conversationProblems(t.conversation)).toEqual([]);
  });

  it('asks the human through the ask tool and gives the answer to the model', () => {
    const t = new Driver();
    t.send({ type: 'start', text: 'deploy' });
    const asked = t.send(respond([toolUse('q', 'ask_user', { question: 'Which region?' })]));
    expect(ofType(asked, 'check_policy')).toEqual([]);
    expect(ofType(asked, 'ask_human')).toEqual([{ type: 'ask_human', callId: 'q', question: 'Which region?' }]);
    const answered = t.send({ type: 'answer', callId: 'q', text: 'eu-west-1' });
    expect(ofType(answered, 'append_messages')[0]?.messages[0]?.content).toEqual([{ type: 'tool_result', tool_use_id: 'q', content: 'eu-west-1', is_error: false }]);
    expect(turnMachine.transition(t.state, { type: 'answer', callId: 'q', text: 'again' }).ok).toBe(false);
  });

  it('stops at the step limit with reason max_steps, after answering the last tool calls', () => {
    const t = new Driver({ limits: { inputTokens: null, outputTokens: null, costUsd: null, maxSteps: 1 } });
    t.send({ type: 'start', text: 'loop' });
    t.send(respond([toolUse('a', 'read_file')]), tool('a', { type: 'policy_decided', decision: 'allow' }));
    const out = t.send(tool('a', { type: 'succeeded', output: 'x' }));
    expect(t.state).toMatchObject({ status: 'completed', reason: 'max_steps' });
    expect(ofType(out, 'call_model')).toEqual([]);
    expect(events(out)).toContainEqual({ kind: 'budget.exhausted', limit: 'steps_per_turn', allowed: 1, used: 1, over: 0, scope: 'turn t1' });
    expect(ofType(out, 'finish')[0]?.result.outcome).toBe('max_steps');
    expect(t.nextRequestProblems()).toEqual([]);
  });

  it('stops when a response spends the token budget, saying which limit and by how much', () => {
    const t = new Driver({ limits: { inputTokens: 150, outputTokens: null, costUsd: null, maxSteps: null } });
    t.send({ type: 'start', text: 'big' });
    const out = t.send(respond([toolUse('a', 'read_file')], { inputTokens: 180, outputTokens: 10, costUsd: null }));
    expect(t.state).toMatchObject({ status: 'completed', reason: 'budget_exhausted', exhaustion: { limit: 'input_tokens', allowed: 150, used: 180, over: 30 } });
    expect(ofType(out, 'run_tool')).toEqual([]);
    expect(events(out).filter((e) => e.kind === 'tool.result')).toHaveLength(1);
    expect(t.state.usage.unpricedCalls).toBe(1);
    expect(t.nextRequestProblems()).toEqual([]);
  });

  it('runs read-only tools side by side and a writing tool alone, in the model’s order', () => {
    const t = new Driver();
    t.send({ type: 'start', text: 'go' });
    t.send(respond([toolUse('r1', 'read_file'), toolUse('r2', 'grep'), toolUse('w', 'write_file'), toolUse('r3', 'read_file')]));
    const allowAll = t.send(...['r1', 'r2', 'w', 'r3'].map((id) => tool(id, { type: 'policy_decided', decision: 'allow' })));
    expect(ofType(allowAll, 'run_tool').map((d) => d.callId)).toEqual(['r1', 'r2']);
    expect(ofType(t.send(tool('r1', { type: 'succeeded', output: '1' })), 'run_tool')).toEqual([]);
    expect(ofType(t.send(tool('r2', { type: 'succeeded', output: '2' })), 'run_tool').map((d) => d.callId)).toEqual(['w']);
    expect(ofType(t.send(tool('w', { type: 'succeeded', output: 'w' })), 'run_tool').map((d) => d.callId)).toEqual(['r3']);
  });

  it('never runs a denied call and answers it with the reason; an approval timeout says so', () => {
    const t = new Driver({ approvalTimeoutMs: 30_000 });
    t.send({ type: 'start', text: 'go' });
    t.send(respond([toolUse('x', 'run_command', { command: 'rm -rf /' }), toolUse('y', 'write_file')]));
    const denied = t.send(tool('x', { type: 'policy_decided', decision: 'deny', reason: 'rule deny run_command(rm *)' }));
    expect(kinds(denied)).toEqual(['tool.denied', 'tool.result']);
    const ask = t.send(tool('y', { type: 'policy_decided', decision: 'ask' }));
    expect(ofType(ask, 'start_timer')).toEqual([{ type: 'start_timer', timerId: 'approval:y', durationMs: 30_000 }]);
    const out = t.send({ type: 'timer_fired', timerId: 'approval:y' });
    expect(t.directives.filter((d) => d.type === 'run_tool')).toEqual([]);
    const results = ofType(out, 'append_messages')[0]?.messages[0]?.content ?? [];
    expect(results.map((b) => (b.type === 'tool_result' ? b.content : ''))).toEqual([
      'Denied: rule deny run_command(rm *). The tool was not run.',
      'No one approved this tool call in time; it was not run.',
    ]);
  });

  it('refuses events that make no sense now, naming the state and the event', () => {
    const idle = createTurn({ turnId: 't' });
    const r = turnMachine.transition(idle, respond([text('?')]));
    expect(r).toEqual({
      ok: false,
      error: { code: 'not_allowed', machine: 'turn', state: 'idle', event: 'model_response', message: "turn: 'model_response' is not accepted in state idle (no transition on 'model_response' from idle)" },
    });
    const t = new Driver();
    t.send({ type: 'start', text: 'go' }, respond([toolUse('a', 'read_file')]));
    const unknown = turnMachine.transition(t.state, tool('zzz', { type: 'succeeded', output: '' }));
    expect(unknown.ok || unknown.error.message).toMatch(/unknown tool call zzz/);
    const permit = turnMachine.transition(t.state, tool('a', { type: 'permit_granted' }));
    expect(permit.ok || permit.error.message).toMatch(/permits are granted by the turn/);
  });
});

describe('a paused answer sent back', () => {
  it('goes back without trailing whitespace (the API refuses a final assistant turn ending in it), and the call continues', () => {
    const d = new Driver();
    d.send({ type: 'start', text: 'search the web' });
    const out = d.send({ type: 'model_response', content: [text('Searching now. \n')], stopReason: 'pause_turn', usage });
    expect(ofType(out, 'call_model')).toEqual([expect.objectContaining({ continuation: true })]);
    expect(d.conversation.at(-1)).toEqual({ role: 'assistant', content: [text('Searching now.')] });
    expect(d.state.text).toBe('Searching now. \n');
  });

  it('drops a last text block that is only whitespace', () => {
    const d = new Driver();
    d.send({ type: 'start', text: 'search the web' });
    d.send({ type: 'model_response', content: [text('Found it.'), text('  ')], stopReason: 'pause_turn', usage });
    expect(d.conversation.at(-1)).toEqual({ role: 'assistant', content: [text('Found it.')] });
  });
});
