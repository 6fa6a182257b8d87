// Repair from what Temporal holds. When the conversation store has lost or damaged a
// segment, the workflow still holds the newest messages of its transcript (the whole run's,
// plus the tail carried over continue-as-new) and the user's message of every turn. This
// rebuilds a valid conversation from them: every user message, and every message from the
// oldest turn the workflow holds in full onwards; it says which turns lost their replies
// and how many messages that is. Pure: the turn runner sends the result with its next
// model call, which writes it to the store as a new chain. Whether a failed call is repaired,
// waited for (a store that could not be reached) or failed is decided here too (afterStoreFailure):
// the runner reads Temporal's failure and executes the decision.
import { conversationProblems, type Message } from './conversation';

/** The failure `type` of a model call that failed in the conversation store (activities/store/errors.ts). */
export const CONVERSATION_STORE_FAILURE = 'ConversationStoreError';

/** What went wrong in the store. missing/corrupt/undecryptable segments are repaired; the rest need the operator. */
export type StoreFaultCause = 'missing' | 'corrupt' | 'undecryptable' | 'unreadable' | 'unwritable' | 'foreign';

/** `details[0]` of a ConversationStoreError (it also carries the model failure fields the turn reads). */
export interface StoreFailureDetails {
  status: null;
  errorType: null;
  apiMessage: null;
  requestId: null;
  inStream: false;
  retryAfterMs: null;
  failureClass: 'fatal';
  usage: null;
  store: string;
  segment: string | null;
  storeCause: StoreFaultCause;
  code: string | null;
  repairable: boolean;
  /** The store could not be reached or was busy: waited out (machines/infra-retry.ts). Absent in failures recorded before. */
  transient?: boolean;
}

/** A failed model call as Temporal delivered it: the failure's type, message and first detail (workflows/turn-results.ts callFailureOf). */
export interface CallFailure {
  readonly type: string | null;
  readonly message: string;
  readonly details: unknown;
}

/** What the turn does after its model call failed. */
export type StoreFailureDecision =
  /** The store lost or damaged a segment: rebuild the conversation from what the workflow holds and call again (once). */
  | { readonly type: 'repair'; readonly error: string }
  /** The store could not be reached or was busy: call again after the infrastructure table's wait (machines/infra-retry.ts). */
  | { readonly type: 'wait'; readonly store: string; readonly message: string }
  /** Anything else, or a store failure that cannot be repaired or waited out: the call failed (the turn's retry rules apply). */
  | { readonly type: 'fail' };

/** The store's fault in a call's failure, or null when the failure is not the store's. */
export function storeFault(failure: CallFailure | null): { repairable: boolean; transient: { store: string; message: string } | null } | null {
  if (failure === null || failure.type !== CONVERSATION_STORE_FAILURE) return null;
  const details = (typeof failure.details === 'object' && failure.details !== null ? failure.details : {}) as Partial<StoreFailureDetails>;
  return {
    repairable: details.repairable === true,
    transient: details.transient === true ? { store: typeof details.store === 'string' ? details.store : 'the conversation store', message: failure.message } : null,
  };
}

/**
 * After a model call failed: repair a store that lost or damaged a segment, unless this call
 * already followed a repair (a conversation is rebuilt once per call: the rebuilt one failing
 * again is not the lost segment); wait out a store that could not be reached, when the run
 * waits out infrastructure (`waitsEnabled`, workflows/infra-wait.ts); else the call failed.
 * `waitsEnabled` is asked only for a store that could not be reached, as the runner asked before
 * this rule moved here: in a workflow, asking records a patch marker the first time.
 */
export function afterStoreFailure(failure: CallFailure | null, call: { readonly repaired: boolean; readonly waitsEnabled: () => boolean }): StoreFailureDecision {
  const fault = storeFault(failure);
  if (fault === null || failure === null) return { type: 'fail' };
  if (fault.repairable && !call.repaired) return { type: 'repair', error: failure.message };
  if (fault.transient !== null && call.waitsEnabled()) return { type: 'wait', ...fault.transient };
  return { type: 'fail' };
}

/** Where a turn began in the conversation, and its user's message once that has left the held messages. */
export interface TurnStart {
  turnId: string;
  /** Index of the turn's user message in the whole conversation. */
  at: number;
  /** Kept only for turns older than the held messages (carried through continue-as-new). */
  text?: string;
  /** The text was cut to fit the carry (its beginning is kept). */
  clipped?: boolean;
}

export interface RebuiltConversation {
  messages: Message[];
  /** Turns whose user message was recovered but whose replies and tool results are gone. */
  lostTurns: string[];
  /** Messages of the conversation that could not be recovered (replies, tool calls and results). */
  lostMessages: number;
  /** Turns whose user message itself is gone (sessions older than this record, or beyond its bound). */
  lostUserMessages: number;
  /** Messages sent again, in the rebuilt conversation. */
  keptMessages: number;
}

const startsTurn = (m: Message): boolean => m.role === 'user' && m.content.length > 0 && m.content.every((b) => b.type === 'text');

/**
 * Rebuilds the conversation from `held` (the messages from index `first` on) and the
 * turns' starts. Throws when nothing valid can be built (the caller then fails the call
 * with the store error it has).
 */
export function rebuildConversation(input: { held: readonly Message[]; first: number; turns: readonly TurnStart[]; droppedTurns?: number }): RebuiltConversation {
  const { held, first } = input;
  const turns = [...input.turns].sort((a, b) => a.at - b.at);
  // The oldest turn whose user message is held: from there on every message is kept.
  const oldestHeld = turns.find((t) => t.at >= first && t.at < first + held.length && startsTurn(held[t.at - first]!));
  let cut: number;
  if (oldestHeld !== undefined) cut = oldestHeld.at - first;
  else {
    // No turn record (a session from before they were kept): the first user message of text alone starts a turn.
    const index = held.findIndex(startsTurn);
    cut = index < 0 ? held.length : index;
  }
  const before = turns.filter((t) => t.at < first + cut);
  const recovered: Message[] = [];
  const lostTurns: string[] = [];
  let lostUserMessages = input.droppedTurns ?? 0;
  for (const t of before) {
    const text = t.text ?? (t.at >= first ? textOf(held[t.at - first]) : undefined);
    if (text === undefined || text.length === 0) {
      lostUserMessages++;
      continue;
    }
    lostTurns.push(t.turnId);
    recovered.push({ role: 'user', content: [{ type: 'text', text: t.clipped ? `${text} … (the rest of this message was lost)` : text }] });
  }
  const kept = held.slice(cut);
  const lostMessages = first + cut - recovered.length;
  const messages: Message[] = [...recovered, ...kept];
  if (lostMessages > 0 && messages.length > 0) {
    const note =
      `(Keel: the conversation store lost part of this conversation. ${lostMessages} earlier message${lostMessages === 1 ? ' is' : 's are'} gone` +
      (recovered.length > 0 ? `; the user's messages of the ${recovered.length} turn${recovered.length === 1 ? '' : 's'} concerned follow, without the replies or tool results` : '') +
      (lostUserMessages > 0 ? `; ${lostUserMessages} older user message${lostUserMessages === 1 ? ' is' : 's are'} gone too` : '') +
      '.)';
    const head = messages[0]!;
    messages[0] = { ...head, content: [{ type: 'text', text: note }, ...head.content] };
  }
  const problems = conversationProblems(messages);
  if (problems.length > 0) throw new Error(`the conversation could not be rebuilt from what the workflow holds: ${problems.join('; ')}`);
  return { messages, lostTurns, lostMessages, lostUserMessages, keptMessages: messages.length };
}

function textOf(message: Message | undefined): string | undefined {
  if (message === undefined) return undefined;
  return message.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
}

/** How much user text the turn records carry through continue-as-new, newest first: full, then clipped, then none. */
export const TURN_TEXT_FULL_BYTES = 128 * 1024;
export const TURN_TEXT_CLIPPED_CHARS = 1_000;
export const TURN_RECORDS_KEPT = 2_000;

/**
 * The turn records to carry: texts for turns older than `tailFirst` (taken from `textAt`
 * when the log still holds the message), newest full while they fit, then clipped, then none (at most 256 KiB of text); at most
 * TURN_RECORDS_KEPT records (older ones are counted in `dropped`).
 */
export function carriedTurns(turns: readonly TurnStart[], tailFirst: number, textAt: (index: number) => string | undefined, dropped: number): { turns: TurnStart[]; dropped: number } {
  const out: TurnStart[] = [];
  let bytes = 0;
  const newestFirst = [...turns].sort((a, b) => b.at - a.at);
  for (const t of newestFirst.slice(0, TURN_RECORDS_KEPT)) {
    if (t.at >= tailFirst) {
      out.unshift({ turnId: t.turnId, at: t.at });
      continue;
    }
    const text = t.text ?? textAt(t.at);
    if (text === undefined) {
      out.unshift({ turnId: t.turnId, at: t.at });
      continue;
    }
    if (bytes + text.length <= TURN_TEXT_FULL_BYTES) {
      bytes += text.length;
      out.unshift({ turnId: t.turnId, at: t.at, text, ...(t.clipped ? { clipped: true } : {}) });
    } else if (bytes + Math.min(text.length, TURN_TEXT_CLIPPED_CHARS) <= 2 * TURN_TEXT_FULL_BYTES) {
      bytes += Math.min(text.length, TURN_TEXT_CLIPPED_CHARS);
      out.unshift({ turnId: t.turnId, at: t.at, text: text.slice(0, TURN_TEXT_CLIPPED_CHARS), ...(text.length > TURN_TEXT_CLIPPED_CHARS || t.clipped ? { clipped: true } : {}) });
    } else {
      // Past the bound: the record stays (a repair counts it as a lost user message).
      out.unshift({ turnId: t.turnId, at: t.at });
    }
  }
  return { turns: out, dropped: dropped + Math.max(0, newestFirst.length - TURN_RECORDS_KEPT) };
}
