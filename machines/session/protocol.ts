// What a session hears (events), what it asks its host to do (directives), and how a
// turn's directives become session events.
import { z } from 'zod';
import { budgetPatchSchema, callUsageSchema, type TurnLimits } from '../budget';
import { type CancelTimer, type StartTimer } from '../directives';
import { type EmitEvent, type SessionStats } from '../events';
import { turnResultSchema, type TurnDirective, type TurnEvent } from '../turn';
import { lazySchema } from '../lazy-schema';

export const sessionEventSchema = lazySchema(() => z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('initialized') }),
  // `suspend`: a setup that failed for good (a foreign store, a bad policy file…) suspends the
  // session with the reason, and `restart` sets it up again; without it (runs recorded before) it fails.
  z.strictObject({ type: z.literal('init_failed'), error: z.string(), suspend: z.literal(true).optional() }),
  z.strictObject({ type: z.literal('user_message'), messageId: z.string().min(1), text: z.string().min(1) }),
  z.strictObject({ type: z.literal('turn_finished'), result: turnResultSchema }),
  z.strictObject({ type: z.literal('input_requested'), turnId: z.string(), callId: z.string(), question: z.string() }),
  z.strictObject({ type: z.literal('answer'), text: z.string() }),
  z.strictObject({ type: z.literal('interrupt'), reason: z.string().optional() }),
  z.strictObject({ type: z.literal('steer'), text: z.string().min(1) }),
  z.strictObject({ type: z.literal('pause'), reason: z.string().optional() }),
  z.strictObject({ type: z.literal('resume') }),
  z.strictObject({ type: z.literal('stop') }),
  z.strictObject({ type: z.literal('reset') }),
  z.strictObject({ type: z.literal('restart') }),
  z.strictObject({ type: z.literal('raise_budget'), limits: budgetPatchSchema, at: z.number() }),
  z.strictObject({ type: z.literal('close'), reason: z.string().optional() }),
  z.strictObject({ type: z.literal('cleanup_done') }),
  z.strictObject({ type: z.literal('timer_fired'), timerId: z.string() }),
  // An interrupted model call's connection closed after its turn had ended: what it was billed
  // for beyond what the turn counted when interrupted (the activity read the stream until then).
  z.strictObject({ type: z.literal('call_settled'), turnId: z.string(), callId: z.string(), usage: callUsageSchema }),
]));
export type SessionEvent = z.infer<typeof sessionEventSchema>;
export type { SessionStats };

export type SessionDirective =
  | EmitEvent
  | StartTimer
  | CancelTimer
  /** Set up what the session needs (tools, MCP servers); answer `initialized` or `init_failed`. */
  | { readonly type: 'initialize' }
  /** Create a turn (`createTurn({ turnId, limits, … })`) and apply `{ type: 'start', text }` to it. */
  | { readonly type: 'start_turn'; readonly turnId: string; readonly messageId: string; readonly text: string; readonly limits: TurnLimits }
  /** Apply this event to the turn in flight. */
  | { readonly type: 'forward_to_turn'; readonly turnId: string; readonly event: TurnEvent }
  /** Release what the session holds; answer `cleanup_done`. */
  | { readonly type: 'cleanup' }
  /** The workflow may return: the session is over. */
  | { readonly type: 'complete'; readonly outcome: 'closed' | 'failed'; readonly reason: string; readonly stats: SessionStats };

/** The session event that a turn's `finish` or `ask_human` directive stands for, so the
 *  runner can pass turn results up without interpreting them. */
export function sessionEventFromTurn(turnId: string, directive: TurnDirective): SessionEvent | null {
  if (directive.type === 'finish') return { type: 'turn_finished', result: directive.result };
  if (directive.type === 'ask_human') return { type: 'input_requested', turnId, callId: directive.callId, question: directive.question };
  return null;
}
