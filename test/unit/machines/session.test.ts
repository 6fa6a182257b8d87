import { describe, expect, it } from 'vitest';
import {
  createSession,
  MachineStateError,
  sessionMachine,
  type NewSession,
  type SessionDirective,
  type SessionEvent,
  type SessionState,
  type TurnResult,
} from '../../../machines/index';
import { accepted, events, kinds, ofType } from './helpers';
import { World } from './runner';

const zero = { inputTokens: 0, outputTokens: 0, costUsd: 0, unpricedCalls: 0 };
const noTools = { success: 0, error: 0, timeout: 0, limit: 0, cancelled: 0, denied: 0 };

function finished(turnId: string, outcome: TurnResult['outcome'] = 'completed', extra: Partial<TurnResult> = {}): SessionEvent {
  return {
    type: 'turn_finished',
    result: { turnId, outcome, steps: 1, usage: { ...zero, inputTokens: 100, outputTokens: 50 }, toolCalls: noTools, finalOutput: 'ok', error: null, exhaustion: null, unappliedSteers: [], ...extra },
  };
}

class Session {
  state: SessionState;
  readonly directives: SessionDirective[];
  constructor(init: Partial<NewSession> = {}) {
    const created = createSession({ sessionId: 's1', at: 1_000, ...init });
    this.state = created.state;
    this.directives = [...created.directives];
  }
  send(...evs: SessionEvent[]): readonly SessionDirective[] {
    const out: SessionDirective[] = [];
    for (const ev of evs) {
      const r = accepted(sessionMachine.transition(this.state, ev));
      this.state = r.state;
      out.push(...r.directives);
    }
    this.directives.push(...out);
    return out;
  }
  refuse(ev: SessionEvent): string {
    const r = sessionMachine.transition(this.state, ev);
    if (r.ok) expect.fail(`${ev.type} was accepted in ${this.state.status}`);
    return r.error.message;
  }
}

const msg = (messageId: string, text = 'hello'): SessionEvent => ({ type: 'user_message', messageId, text });

describe('session machine', () => {
  it('takes stop in every state that is not terminal (seeds 001, 003); a stop while initializing stays paused until resumed', () => {
    const reach: Record<string, (s: Session) => void> = {
      initializing: () => {},
      active: (s) => s.send({ type: 'initialized' }),
      processing: (s) => s.send({ type: 'initialized' }, msg('m1')),
      paused: (s) => s.send({ type: 'initialized' }, { type: 'pause' }),
      suspended: (s) => s.send({ type: 'initialized' }, msg('m1'), finished('s1/turn-1', 'completed', { usage: { ...zero, outputTokens: 500 } })),
      closing: (s) => s.send({ type: 'initialized' }, msg('m1'), { type: 'close' }),
    };
    for (const [status, go] of Object.entries(reach)) {
      const s = new Session({ limits: { outputTokens: 100 } });
      go(s);
      expect(s.state.status).toBe(status);
      const out = s.send({ type: 'stop' });
      expect(kinds(out)).toContain('session.control');
      expect(s.state.status).toBe(status === 'suspended' || status === 'closing' ? status : 'paused');
    }
    const s = new Session();
    s.send({ type: 'stop' });
    expect(s.refuse({ type: 'resume' })).toMatch(/still loading its tools/);
    s.send({ type: 'initialized' });
    expect(s.state).toMatchObject({ status: 'paused', reason: 'stopped' });
    s.send({ type: 'resume' });
    expect(s.state.status).toBe('active');
  });

  it('follows the seed 000 happy path: initialize, chat, agent complete', () => {
    const s = new Session();
    expect(kinds(s.directives)).toEqual(['session.created']);
    expect(ofType(s.directives, 'initialize')).toHaveLength(1);
    s.send({ type: 'initialized' });
    expect(s.state.status).toBe('active');
    const chat = s.send(msg('m1', 'Hello'));
    expect(s.state).toMatchObject({ status: 'processing', turnId: 's1/turn-1' });
    expect(ofType(chat, 'start_turn')).toEqual([
      { type: 'start_turn', turnId: 's1/turn-1', messageId: 'm1', text: 'Hello', limits: { inputTokens: null, outputTokens: null, costUsd: null, maxSteps: null } },
    ]);
    s.send(finished('s1/turn-1'));
    expect(s.state).toMatchObject({ status: 'active', turnId: null, turns: 1, usage: { inputTokens: 100 } });
  });

  it('refuses a message after the session has ended (seed 000 invalid transition)', () => {
    const s = new Session();
    s.send({ type: 'initialized' }, { type: 'close' }, { type: 'cleanup_done' });
    expect(s.state.status).toBe('closed');
    expect(ofType(s.directives, 'complete')).toEqual([{ type: 'complete', outcome: 'closed', reason: 'requested', stats: { turns: 0, toolCalls: noTools, usage: zero } }]);
    const r = sessionMachine.transition(s.state, msg('late'));
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatchObject({ code: 'not_allowed', machine: 'session', state: 'closed', event: 'user_message' });
    expect(s.refuse(msg('late'))).toMatch(/closed is terminal/);
  });

  it('queues messages that arrive while a turn runs and starts them in order, one at a time', () => {
    const s = new Session();
    s.send({ type: 'initialized' }, msg('m1'));
    const queued = s.send(msg('m2', 'second'), msg('m3', 'third'));
    expect(ofType(queued, 'start_turn')).toEqual([]);
    expect(events(queued)).toContainEqual({ kind: 'session.message_received', sessionId: 's1', messageId: 'm3', queued: true, queueLength: 2 });
    const next = s.send(finished('s1/turn-1'));
    expect(ofType(next, 'start_turn').map((d) => [d.turnId, d.messageId])).toEqual([['s1/turn-2', 'm2']]);
    expect(s.refuse(finished('s1/turn-1'))).toMatch(/turn s1\/turn-1 is not the turn in flight/);
    s.send(finished('s1/turn-2'));
    expect(s.state).toMatchObject({ status: 'processing', turnId: 's1/turn-3', queue: [] });
  });

  it('pauses without killing the running turn, holds the queue, and resumes it', () => {
    const s = new Session();
    s.send({ type: 'initialized' }, msg('m1'), msg('m2'), { type: 'pause' });
    expect(s.state.status).toBe('paused');
    expect(ofType(s.send(finished('s1/turn-1')), 'start_turn')).toEqual([]);
    expect(s.state).toMatchObject({ status: 'paused', turnId: null, queue: [{ messageId: 'm2' }] });
    const resumed = s.send({ type: 'resume' });
    expect(kinds(resumed)).toContain('session.resumed');
    expect(ofType(resumed, 'start_turn').map((d) => d.messageId)).toEqual(['m2']);
  });

  it('stop = interrupt + pause', () => {
    const s = new Session();
    s.send({ type: 'initialized' }, msg('m1'));
    const out = s.send({ type: 'stop' });
    expect(s.state).toMatchObject({ status: 'paused', reason: 'stopped' });
    expect(ofType(out, 'forward_to_turn')).toEqual([{ type: 'forward_to_turn', turnId: 's1/turn-1', event: { type: 'interrupt', reason: 'stopped by the user' } }]);
    s.send(finished('s1/turn-1', 'interrupted'));
    expect(s.state).toMatchObject({ status: 'paused', turnId: null });
  });

  it('suspends when a budget is spent, says which and by how much, and continues after raiseBudget', () => {
    const s = new Session({ limits: { inputTokens: 150 } });
    s.send({ type: 'initialized' }, msg('m1'), msg('m2'));
    expect(ofType(s.directives, 'start_turn')[0]?.limits.inputTokens).toBe(150);
    const out = s.send(finished('s1/turn-1', 'budget_exhausted', { usage: { ...zero, inputTokens: 180 } }));
    expect(s.state).toMatchObject({ status: 'suspended', reason: 'budget', exhaustion: { limit: 'input_tokens', allowed: 150, used: 180, over: 30 } });
    expect(events(out)).toContainEqual({ kind: 'budget.exhausted', limit: 'input_tokens', allowed: 150, used: 180, over: 30, scope: 'session s1' });
    expect(s.refuse({ type: 'reset' })).toMatch(/input_tokens budget is exhausted \(180 of 150\); raise_budget first/);
    expect(s.refuse({ type: 'resume' })).toMatch(/raise_budget first/);

    s.send({ type: 'raise_budget', limits: { inputTokens: 170 }, at: 2_000 });
    expect(s.state.status).toBe('suspended');
    const raised = s.send({ type: 'raise_budget', limits: { inputTokens: 10_000 }, at: 3_000 });
    expect(kinds(raised)).toEqual(expect.arrayContaining(['session.budget_raised', 'session.unsuspended']));
    expect(ofType(raised, 'start_turn')).toMatchObject([{ messageId: 'm2', limits: { inputTokens: 10_000 - 180 } }]);
  });

  it('suspends after consecutive failed turns and recovers with reset (seed 003 error → idle)', () => {
    const s = new Session({ maxConsecutiveErrors: 3 });
    s.send({ type: 'initialized' });
    for (let i = 1; i <= 3; i++) s.send(msg(`m${i}`), finished(`s1/turn-${i}`, 'failed', { error: '529' }));
    expect(s.state).toMatchObject({ status: 'suspended', reason: 'error_threshold', errorStreak: 3 });
    // A message sent meanwhile waits; reset clears the streak and runs it.
    expect(ofType(s.send(msg('m4')), 'start_turn')).toEqual([]);
    const reset = s.send({ type: 'reset' });
    expect(s.state).toMatchObject({ status: 'processing', errorStreak: 0 });
    expect(ofType(reset, 'start_turn').map((d) => d.messageId)).toEqual(['m4']);
  });

  it('restarts a suspended session through initializing (seed 003 error → starting)', () => {
    const s = new Session({ maxConsecutiveErrors: 1 });
    s.send({ type: 'initialized' }, msg('m1'), finished('s1/turn-1', 'failed'));
    const out = s.send({ type: 'restart' });
    expect(s.state.status).toBe('initializing');
    expect(ofType(out, 'initialize')).toHaveLength(1);
    s.send({ type: 'initialized' });
    expect(s.state.status).toBe('active');
  });

  it('ends through closing → closed after the idle timeout, with final stats', () => {
    const s = new Session({ idleTimeoutMs: 600_000 });
    const ready = s.send({ type: 'initialized' });
    expect(ofType(ready, 'start_timer')).toEqual([{ type: 'start_timer', timerId: 'idle-1', durationMs: 600_000 }]);
    const busy = s.send(msg('m1'));
    expect(ofType(busy, 'cancel_timer')).toEqual([{ type: 'cancel_timer', timerId: 'idle-1' }]);
    const idle = s.send(finished('s1/turn-1'));
    const timerId = ofType(idle, 'start_timer')[0]?.timerId ?? '';
    expect(s.refuse({ type: 'timer_fired', timerId: 'idle-1' })).toMatch(/not running/);
    const closing = s.send({ type: 'timer_fired', timerId });
    expect(s.state).toMatchObject({ status: 'closing', reason: 'timeout' });
    expect(ofType(closing, 'cleanup')).toHaveLength(1);
    const closed = s.send({ type: 'cleanup_done' });
    expect(events(closed)).toContainEqual({
      kind: 'session.closed',
      sessionId: 's1',
      finalStats: { turns: 1, toolCalls: noTools, usage: { ...zero, inputTokens: 100, outputTokens: 50 } },
    });
  });

  it('closing waits for the running turn to finish before cleanup', () => {
    const s = new Session();
    s.send({ type: 'initialized' }, msg('m1'));
    const out = s.send({ type: 'close', reason: 'user left' });
    expect(ofType(out, 'forward_to_turn')).toHaveLength(1);
    expect(ofType(out, 'cleanup')).toEqual([]);
    expect(s.refuse({ type: 'cleanup_done' })).toMatch(/a turn is still finishing/);
    expect(ofType(s.send(finished('s1/turn-1', 'interrupted')), 'cleanup')).toHaveLength(1);
    s.send({ type: 'cleanup_done' });
    expect(s.state).toMatchObject({ status: 'closed', reason: 'user left' });
  });

  it('stops a turn at the wall-clock deadline and suspends until the deadline is raised', () => {
    const s = new Session({ limits: { wallClockMs: 60_000 } });
    expect(ofType(s.directives, 'start_timer')).toEqual([{ type: 'start_timer', timerId: 'deadline-1', durationMs: 60_000 }]);
    s.send({ type: 'initialized' }, msg('m1'));
    const out = s.send({ type: 'timer_fired', timerId: 'deadline-1' });
    expect(s.state).toMatchObject({ status: 'suspended', exhaustion: { limit: 'wall_clock', allowed: 60_000 } });
    expect(ofType(out, 'forward_to_turn')[0]?.event).toMatchObject({ type: 'interrupt' });
    s.send(finished('s1/turn-1', 'interrupted'));
    const raised = s.send({ type: 'raise_budget', limits: { wallClockMs: 120_000 }, at: 61_000 });
    expect(ofType(raised, 'start_timer')).toContainEqual({ type: 'start_timer', timerId: 'deadline-2', durationMs: 60_000 });
    expect(s.state.status).toBe('active');
  });

  it('routes the agent’s question to the human and the answer back to the turn', () => {
    const s = new Session();
    s.send({ type: 'initialized' }, msg('m1'));
    s.send({ type: 'input_requested', turnId: 's1/turn-1', callId: 'q1', question: 'Which branch?' });
    expect(s.state).toMatchObject({ status: 'awaiting_input', question: { callId: 'q1', question: 'Which branch?' } });
    const out = s.send({ type: 'answer', text: 'main' });
    expect(s.state.status).toBe('processing');
    expect(ofType(out, 'forward_to_turn')).toEqual([{ type: 'forward_to_turn', turnId: 's1/turn-1', event: { type: 'answer', callId: 'q1', text: 'main' } }]);
    expect(s.refuse({ type: 'answer', text: 'again' })).toMatch(/'answer' is not accepted in state processing/);
    s.send({ type: 'pause' });
    expect(s.refuse({ type: 'answer', text: 'again' })).toMatch(/no question is pending/);
  });

  it('forwards steer to the running turn, refuses it when nothing runs, and requeues a steer the turn could not apply', () => {
    const s = new Session();
    s.send({ type: 'initialized' });
    expect(s.refuse({ type: 'steer', text: 'x' })).toMatch(/'steer' is not accepted in state active/);
    s.send({ type: 'pause' });
    expect(s.refuse({ type: 'steer', text: 'x' })).toMatch(/no turn is running to steer; send a message instead/);
    s.send({ type: 'resume' }, msg('m1'));
    expect(ofType(s.send({ type: 'steer', text: 'use tabs' }), 'forward_to_turn')[0]?.event).toEqual({ type: 'steer', text: 'use tabs' });
    const next = s.send(finished('s1/turn-1', 'max_steps', { unappliedSteers: ['use tabs'] }));
    expect(ofType(next, 'start_turn')).toMatchObject([{ messageId: 's1/turn-1/steer-1', text: 'use tabs' }]);
  });

  it('restores from JSON exactly, and rejects malformed state with the paths at fault', () => {
    const s = new Session({ limits: { turns: 5 }, idleTimeoutMs: 1_000 });
    s.send({ type: 'initialized' }, msg('m1'), msg('m2'));
    const json = JSON.parse(JSON.stringify(sessionMachine.toJSON(s.state))) as unknown;
    expect(sessionMachine.fromJSON(json)).toEqual(s.state);
    expect(() => sessionMachine.fromJSON({ ...(json as object), status: 'dancing' })).toThrow(MachineStateError);
    expect(() => sessionMachine.fromJSON({ ...(json as object), turns: -1 })).toThrow(/invalid session state: turns: /);
    expect(() => sessionMachine.fromJSON(null)).toThrow(/invalid session state/);
  });

  it('validates signal payloads before they become events', () => {
    expect(sessionMachine.parseEvent({ type: 'user_message', messageId: 'm', text: 'hi' })).toEqual({ ok: true, event: { type: 'user_message', messageId: 'm', text: 'hi' } });
    const bad = sessionMachine.parseEvent({ type: 'user_message', text: '' });
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.error).toMatch(/^invalid session event: /);
  });
});

describe('session and turn together, run as the workflow will run them', () => {
  it('keeps a two-turn conversation with tools, an interrupt and a queued message valid for the Messages API', () => {
    const world = new World(createSession({ sessionId: 's', at: 0 }).state);
    world.applySession({ type: 'initialized' });
    world.applySession(msg('m1', 'list the files'));
    world.applyTurn({ type: 'model_response', content: [{ type: 'tool_use', id: 'a', name: 'read', input: {} }, { type: 'tool_use', id: 'b', name: 'write', input: {} }], stopReason: 'tool_use', usage: { inputTokens: 10, outputTokens: 5, costUsd: 0.5 } });
    world.applySession(msg('m2', 'then summarise'));
    world.applyTurn({ type: 'tool', callId: 'a', event: { type: 'policy_decided', decision: 'allow' } });
    world.applySession({ type: 'interrupt' });
    expect(world.session).toMatchObject({ status: 'processing', turnId: 's/turn-2', turns: 1, toolCalls: { cancelled: 2 } });
    world.applyTurn({ type: 'model_response', content: [{ type: 'text', text: 'Summary.' }], stopReason: 'end_turn', usage: { inputTokens: 10, outputTokens: 5, costUsd: 0.5 } });
    expect(world.session).toMatchObject({ status: 'active', turns: 2, usage: { inputTokens: 20, costUsd: 1 } });
    expect(world.conversation.map((m) => [m.role, m.content.map((b) => b.type).join('+')])).toEqual([
      ['user', 'text'],
      ['assistant', 'tool_use+tool_use'],
      ['user', 'tool_result+tool_result'],
      ['assistant', 'text'],
      ['user', 'text'],
      ['assistant', 'text'],
    ]);
    expect(world.violations).toEqual([]);
  });
});
