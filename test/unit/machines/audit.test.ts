// Seed 003's audit, made exhaustive: what the reducers actually do is compared with each
// machine's declared table. Every row must be exercised by some walk, every state
// reached, and every (state, event) pair the table does not list must be refused with
// `not_allowed` naming the state and the event.
import { describe, expect, it } from 'vitest';
import {
  createSession,
  goalMachine,
  sessionMachine,
  streamMachine,
  toolCallMachine,
  turnMachine,
  type ContentBlock,
  type TransitionResult,
  type TurnEvent,
} from '../../../machines/index';
import type { Step } from './generators';
import { World } from './runner';

const modelResponseWith = (content: ContentBlock[]): TurnEvent => ({
  type: 'model_response',
  content,
  stopReason: 'tool_use',
  usage: { inputTokens: 10, outputTokens: 10, costUsd: null },
});
import { goalWalk, sessionWalk, streamWalk, toolCallWalk, turnWalk } from './walks';

interface Auditable<St extends { status: string }, Ev extends { type: string }, D> {
  readonly name: string;
  readonly states: readonly string[];
  readonly events: readonly string[];
  readonly table: readonly { from: string; event: string; to: string }[];
  transition(state: St, event: Ev): TransitionResult<St, D>;
}

/** A fixed pseudo-random stream: the audit must be reproducible, not lucky. */
function choices(seed: number, length: number): number[] {
  let x = seed;
  return Array.from({ length }, () => {
    x = (x * 1_103_515_245 + 12_345) % 2_147_483_648;
    return x % 1_000_003;
  });
}

function audit<St extends { status: string }, Ev extends { type: string }, D>(steps: readonly Step<St, Ev, D>[]) {
  const key = (from: string, event: string, to: string) => `${from} --${event}--> ${to}`;
  const hit = new Set<string>();
  const states = new Map<string, St[]>();
  const events = new Map<string, Ev>();
  const violations: string[] = [];
  for (const { before, event, result } of steps) {
    const seen = states.get(before.status) ?? [];
    if (seen.length < 4) states.set(before.status, [...seen, before]);
    if (!events.has(event.type)) events.set(event.type, event);
    if (result.ok) {
      hit.add(key(before.status, event.type, result.state.status));
      const after = states.get(result.state.status) ?? [];
      if (after.length < 4) states.set(result.state.status, [...after, result.state]);
    } else if (result.error.code === 'table_violation') {
      violations.push(result.error.message);
    }
  }
  return { hit, states, events, violations, key };
}

function describeAudit<St extends { status: string }, Ev extends { type: string }, D>(machine: Auditable<St, Ev, D>, steps: () => Step<St, Ev, D>[]) {
  describe(`${machine.name} machine audit`, () => {
    const result = audit(steps());
    it('never moves outside its table', () => {
      expect(result.violations).toEqual([]);
    });
    it('exercises every row of its table', () => {
      const missing = machine.table.map((r) => result.key(r.from, r.event, r.to)).filter((k) => !result.hit.has(k));
      expect(missing).toEqual([]);
    });
    it('reaches every state and sees every event', () => {
      expect([...result.states.keys()].sort()).toEqual([...machine.states].sort());
      expect([...result.events.keys()].sort()).toEqual([...machine.events].sort());
    });
    it('refuses every (state, event) pair the table does not list, naming both', () => {
      const listed = new Set(machine.table.map((r) => `${r.from}/${r.event}`));
      let checked = 0;
      for (const status of machine.states) {
        for (const type of machine.events) {
          if (listed.has(`${status}/${type}`)) continue;
          const event = result.events.get(type);
          for (const state of result.states.get(status) ?? []) {
            if (event === undefined) continue;
            const r = machine.transition(state, event);
            expect(r.ok, `${status} × ${type}`).toBe(false);
            if (!r.ok) expect(r.error).toMatchObject({ code: 'not_allowed', machine: machine.name, state: status, event: type });
            checked++;
          }
        }
      }
      expect(checked).toBeGreaterThan(0);
    });
  });
}

describeAudit(toolCallMachine, () =>
  Array.from({ length: 400 }, (_, i) => toolCallWalk(i % 3 === 0 ? 'ask' : 'tool', i % 2 === 0, choices(i + 1, 12)).steps).flat(),
);
describeAudit(turnMachine, () => Array.from({ length: 500 }, (_, i) => turnWalk(i, choices(1_000 + i, 40)).steps).flat());
/** Rows random walks reach too rarely to rely on: driven on purpose. */
function rareSessionRows() {
  // The last allowed turn ends while its question is open (interrupted straight at the turn).
  const world = new World(createSession({ sessionId: 's', at: 0, limits: { turns: 1 } }).state);
  world.applySession({ type: 'initialized' });
  world.applySession({ type: 'user_message', messageId: 'm1', text: 'hi' });
  world.applyTurn(modelResponseWith([{ type: 'tool_use', id: 'q1', name: 'ask', input: { question: 'which?' } }]));
  world.applyTurn({ type: 'interrupt' });
  expect(world.session.status).toBe('suspended');
  // The wall clock runs out while the agent waits for the human's answer.
  const waiting = new World(createSession({ sessionId: 's', at: 0, limits: { wallClockMs: 60_000 } }).state);
  waiting.applySession({ type: 'initialized' });
  waiting.applySession({ type: 'user_message', messageId: 'm1', text: 'hi' });
  waiting.applyTurn(modelResponseWith([{ type: 'tool_use', id: 'q1', name: 'ask', input: { question: 'which?' } }]));
  expect(waiting.session.status).toBe('awaiting_input');
  const deadline = waiting.session.deadlineTimerId;
  if (deadline !== null) waiting.applySession({ type: 'timer_fired', timerId: deadline });
  expect(waiting.session.status).toBe('suspended');
  // An earlier interrupted call settles past the output budget while a turn runs, and while it asks.
  const settled = (asking: boolean) => {
    const w = new World(createSession({ sessionId: 's', at: 0, limits: { outputTokens: 1_000 } }).state);
    w.applySession({ type: 'initialized' });
    w.applySession({ type: 'user_message', messageId: 'm1', text: 'hi' });
    if (asking) w.applyTurn(modelResponseWith([{ type: 'tool_use', id: 'q1', name: 'ask', input: { question: 'which?' } }]));
    expect(w.session.status).toBe(asking ? 'awaiting_input' : 'processing');
    w.applySession({ type: 'call_settled', turnId: 't0', callId: 'model:t0:1:1', usage: { inputTokens: 0, outputTokens: 1_200, costUsd: null, estimated: true } });
    expect(w.session.status).toBe('suspended');
    return w.sessionSteps;
  };
  return [...world.sessionSteps, ...waiting.sessionSteps, ...settled(false), ...settled(true)];
}

describeAudit(sessionMachine, () => [...Array.from({ length: 600 }, (_, i) => sessionWalk(i, choices(2_000 + i, 150)).sessionSteps).flat(), ...rareSessionRows()]);
describeAudit(goalMachine, () => Array.from({ length: 1_000 }, (_, i) => goalWalk(i, choices(3_000 + i, 100)).steps).flat());
describeAudit(streamMachine, () => Array.from({ length: 100 }, (_, i) => streamWalk(choices(4_000 + i, 30)).steps).flat());
