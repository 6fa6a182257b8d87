// Repair from what Temporal holds: the rebuilt conversation keeps every user message it
// has, every message from the oldest whole turn on, is a valid request, and counts what
// it lost. The turn records carried through continue-as-new stay bounded.
import { describe, expect, it } from 'vitest';
import { conversationProblems, type Message } from '../../../machines/conversation';
import { afterStoreFailure, carriedTurns, CONVERSATION_STORE_FAILURE, rebuildConversation, TURN_RECORDS_KEPT, TURN_TEXT_FULL_BYTES, type TurnStart } from '../../../machines/conversation-repair';
import { ConversationLog } from '../../../workflows/runtime';

const user = (text: string): Message => ({ role: 'user', content: [{ type: 'text', text }] });
const assistant = (text: string): Message => ({ role: 'assistant', content: [{ type: 'text', text }] });
const call = (id: string): Message => ({ role: 'assistant', content: [{ type: 'tool_use', id, name: 'list_dir', input: {} }] });
const result = (id: string): Message => ({ role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: 'a.txt', is_error: false }] });

/** A log of `turns` turns, each: user, tool call, tool result, answer. */
function sessionLog(turns: number): ConversationLog {
  const log = new ConversationLog();
  for (let t = 1; t <= turns; t++) {
    log.turnStarted(`turn-${t}`);
    log.append([user(`question ${t}`), call(`c${t}`), result(`c${t}`), assistant(`answer ${t}`)]);
  }
  return log;
}

describe('rebuildConversation', () => {
  it('with the whole conversation held, rebuilds it as it was and loses nothing', () => {
    const log = sessionLog(3);
    log.turnStarted('turn-4');
    log.append([user('question 4')]);
    const rebuilt = log.repair();
    expect(rebuilt.lostMessages).toBe(0);
    expect(rebuilt.lostTurns).toEqual([]);
    expect(rebuilt.messages).toHaveLength(13);
    expect(log.outgoing()).toEqual({ head: null, append: rebuilt.messages });
  });

  it('after continue-as-new keeps every user message, the held turns whole, and says what is gone', () => {
    const before = sessionLog(20);
    // The tail holds the newest 10 messages: turns 18 (from its tool result) to 20.
    const carried = new ConversationLog(before.snapshot(10, 1 << 20));
    carried.turnStarted('turn-21');
    carried.append([user('question 21')]);
    const rebuilt = carried.repair();
    expect(conversationProblems(rebuilt.messages)).toEqual([]);
    const texts = rebuilt.messages.flatMap((m) => m.content.filter((b) => b.type === 'text').map((b) => b.text));
    for (let t = 1; t <= 21; t++) expect(texts).toContain(`question ${t}`);
    // Turns 1–18 lost their replies (18 has only its tail held: cut at a turn start).
    expect(rebuilt.lostTurns).toEqual(Array.from({ length: 18 }, (_, i) => `turn-${i + 1}`));
    expect(rebuilt.lostMessages).toBe(18 * 4 - 18);
    expect(texts[0]).toMatch(/^\(Keel: the conversation store lost part of this conversation\. 54 earlier messages are gone; the user's messages of the 18 turns concerned follow/);
    expect(rebuilt.messages.at(-1)).toEqual(user('question 21'));
    expect(texts).toContain('answer 19');
  });

  it('a session from before turn records: cuts at the first user message of text, and counts the rest as lost', () => {
    const held = [result('c1'), assistant('answer 1'), user('question 2'), assistant('answer 2'), user('question 3')];
    const rebuilt = rebuildConversation({ held, first: 6, turns: [] });
    expect(rebuilt.messages.slice(1)).toEqual(held.slice(3));
    expect(rebuilt.lostMessages).toBe(8);
    expect(conversationProblems(rebuilt.messages)).toEqual([]);
  });

  it('refuses to invent a conversation when nothing valid is held', () => {
    expect(() => rebuildConversation({ held: [result('c1')], first: 3, turns: [] })).toThrow(/could not be rebuilt/);
  });
});

describe('carriedTurns', () => {
  it('keeps the newest user texts whole, clips older ones, and stays bounded', () => {
    const big = 'x'.repeat(20_000);
    const turns: TurnStart[] = Array.from({ length: TURN_RECORDS_KEPT + 50 }, (_, i) => ({ turnId: `t${i}`, at: i * 2, text: big }));
    const out = carriedTurns(turns, Number.MAX_SAFE_INTEGER, () => undefined, 0);
    expect(out.turns).toHaveLength(TURN_RECORDS_KEPT);
    expect(out.dropped).toBe(50);
    const bytes = out.turns.reduce((sum, t) => sum + (t.text?.length ?? 0), 0);
    expect(bytes).toBeLessThanOrEqual(2 * TURN_TEXT_FULL_BYTES);
    expect(out.turns.at(-1)!.text).toBe(big);
    expect(out.turns[0]!.text).toBeUndefined();
    expect(out.turns.some((t) => t.clipped)).toBe(true);
  });
});

describe('afterStoreFailure', () => {
  const storeFailure = (details: Record<string, unknown>, message = 'conversation segment s1 in local directory /x: gone') => ({ type: CONVERSATION_STORE_FAILURE, message, details: { failureClass: 'fatal', store: 'local /x', ...details } });
  const fresh = { repaired: false, waitsEnabled: () => true };

  it('repairs a lost or damaged segment once per call: the rebuilt conversation failing again fails the call', () => {
    const lost = storeFailure({ storeCause: 'missing', repairable: true });
    expect(afterStoreFailure(lost, fresh)).toEqual({ type: 'repair', error: 'conversation segment s1 in local directory /x: gone' });
    expect(afterStoreFailure(lost, { ...fresh, repaired: true })).toEqual({ type: 'fail' });
  });

  it('waits out a store it could not reach, only where the run waits out infrastructure, and asks that only then', () => {
    const down = storeFailure({ storeCause: 'unreadable', repairable: false, transient: true }, 'the conversation store: connection refused');
    expect(afterStoreFailure(down, fresh)).toEqual({ type: 'wait', store: 'local /x', message: 'the conversation store: connection refused' });
    // A call already repaired still waits for its store.
    expect(afterStoreFailure(down, { ...fresh, repaired: true })).toMatchObject({ type: 'wait' });
    expect(afterStoreFailure(down, { repaired: false, waitsEnabled: () => false })).toEqual({ type: 'fail' });
    // Asking records a patch marker in a workflow: never for a failure that is not the store's, nor for a repair.
    let asked = 0;
    const counting = { repaired: false, waitsEnabled: () => (asked++, true) };
    afterStoreFailure({ type: 'ModelServerError', message: '529', details: { failureClass: 'overloaded' } }, counting);
    afterStoreFailure(storeFailure({ storeCause: 'corrupt', repairable: true }), counting);
    afterStoreFailure(null, counting);
    expect(asked).toBe(0);
    afterStoreFailure(down, counting);
    expect(asked).toBe(1);
  });

  it('fails a call whose failure is not the store, or a store fault that is neither repairable nor transient', () => {
    expect(afterStoreFailure({ type: 'ModelServerError', message: 'overloaded', details: { failureClass: 'overloaded' } }, fresh)).toEqual({ type: 'fail' });
    expect(afterStoreFailure(null, fresh)).toEqual({ type: 'fail' });
    expect(afterStoreFailure(storeFailure({ storeCause: 'foreign', repairable: false }), fresh)).toEqual({ type: 'fail' });
    expect(afterStoreFailure(storeFailure({ storeCause: 'unwritable', repairable: false, transient: false }), fresh)).toEqual({ type: 'fail' });
    // Details that are not an object (a failure from elsewhere under the store's type) decide nothing.
    expect(afterStoreFailure({ type: CONVERSATION_STORE_FAILURE, message: 'odd', details: 'text' }, fresh)).toEqual({ type: 'fail' });
  });
});

