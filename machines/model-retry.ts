// The one retry table for model calls: every caller's backoff numbers are here, and every
// caller reads its row (the turn machine, the goal's planner and critic, the model
// activity's Temporal retry of a lost attempt). Retries live in ONE tier — the workflow,
// on durable timers — and the model activity runs a single attempt per schedule (only an
// attempt lost with its worker is retried by Temporal), so the tiers never multiply
// (before: 4 activity attempts × 4 turn attempts = 16 billed requests). Every attempt
// returns to the workflow, which is also what lets the usage of failed attempts be
// counted. The README's "Model call retries" section shows this same table.
import { z } from 'zod';
import { lazySchema } from './lazy-schema';

export const MODEL_FAILURE_CLASSES = ['overloaded', 'transient', 'context_window', 'malformed', 'fatal'] as const;
export const modelFailureClassSchema = lazySchema(() => z.enum(MODEL_FAILURE_CLASSES));
export type ModelFailureClass = z.infer<typeof modelFailureClassSchema>;

export interface RetryRule {
  /** Retries after the first attempt (the whole call: every class shares the call's attempts). */
  readonly retries: number;
  /** Wait before retry n (1-based → index n-1; the last entry repeats); a retry-after the API sends wins when longer. */
  readonly backoffMs: readonly number[];
  readonly honoursRetryAfter: boolean;
  /** A retry-after longer than this is not waited for: the call fails instead (time bound). */
  readonly maxDelayMs: number;
  /** Retried as a different request (after compaction), never the same one. */
  readonly compactFirst: boolean;
  readonly why: string;
}

/**
 * Who retries: a turn's model call in a session (someone is there to see the failure and
 * send again), a turn of a goal's task agent (nobody is: a failed turn fails the task), or
 * the goal's planner and critic (calls that must answer through a tool).
 */
export type RetryCaller = 'turn' | 'unattended_turn' | 'answer';

const never = (why: string): RetryRule => ({ retries: 0, backoffMs: [], honoursRetryAfter: false, maxDelayMs: 0, compactFirst: false, why });

/** A turn's request that did not fit: compacted, then sent once more (a different, smaller request). */
const COMPACT_ONCE: RetryRule = {
  retries: 1,
  backoffMs: [0],
  honoursRetryAfter: false,
  maxDelayMs: 0,
  compactFirst: true,
  why: 'prompt too long / model_context_window_exceeded: compact the conversation, then one more (smaller) request',
};

/** Seed 001: at most three retries, 1 s / 2 s / 3 s apart, for the whole call. */
const TURN_BACKOFF_MS = [1_000, 2_000, 3_000];
/**
 * The goal cannot go on without its planner or critic, and an unattended goal stopped by
 * one bad minute of the API is work lost, so they wait out about three minutes (191 s) of
 * failures: 11 retries, 1, 2, 3, 5, 10, 20, then 30 s apart. 8 rounds over 36 s were not
 * enough: chaos seed 80023 draws 7 faults in a row at 30 %, and stopped a goal in CI twice.
 */
const ANSWER_BACKOFF_MS = [1_000, 2_000, 3_000, 5_000, 10_000, 20_000, 30_000];

/** Rows that wait out about three minutes of a failing API (the planner's, the critic's, a task agent's). */
const patient = (why: string, maxDelayMs: number): RetryRule => ({
  retries: 11,
  backoffMs: ANSWER_BACKOFF_MS,
  honoursRetryAfter: true,
  maxDelayMs,
  compactFirst: false,
  why,
});

export const RETRY_TABLE: Readonly<Record<RetryCaller, Readonly<Record<ModelFailureClass, RetryRule>>>> = {
  turn: {
    overloaded: {
      retries: 3,
      backoffMs: TURN_BACKOFF_MS,
      honoursRetryAfter: true,
      maxDelayMs: 60_000,
      compactFirst: false,
      why: '429 rate limit, 529 overloaded: the API says when to come back (retry-after); waits longer than 60 s end the call',
    },
    transient: {
      retries: 3,
      backoffMs: TURN_BACKOFF_MS,
      honoursRetryAfter: true,
      maxDelayMs: 60_000,
      compactFirst: false,
      why: 'network errors, 5xx, 408/409, dropped or stalled streams, timeouts, a lost worker: the next try may succeed',
    },
    context_window: COMPACT_ONCE,
    malformed: never('malformed output: the same request is never sent twice (max_tokens inside tool_use is handled as truncation, not here)'),
    fatal: never('400/401/402/403/404/413/422, a missing key, invalid input: the same request fails the same way'),
  },
  // A task agent's turn: a failed turn fails the task, and two failed attempts block the
  // goal until a human comes. At 30 % faults, chaos seed 80023's 7 faults in a row failed
  // both attempts of one task in 4 tries each (1/2/3 s). It waits like the planner.
  unattended_turn: {
    overloaded: patient("a task agent's turn: nobody is there to send again, so it waits out about three minutes of an overloaded API", 300_000),
    transient: patient('as overloaded: a lost worker or a failing network for up to about three minutes', 300_000),
    context_window: COMPACT_ONCE,
    malformed: never('as a session turn: the same request is never sent twice'),
    fatal: never('as a session turn: the same request fails the same way'),
  },
  answer: {
    overloaded: patient('the goal cannot go on without its planner or critic: it waits out about three minutes of an overloaded API', Number.POSITIVE_INFINITY),
    transient: patient('as overloaded: a lost worker or a failing network for up to about three minutes', Number.POSITIVE_INFINITY),
    context_window: never("the planner's prompt does not shrink: there is no compaction here"),
    malformed: never('malformed output: the same request is never sent twice'),
    fatal: never('the same request fails the same way'),
  },
};


/** Attempts of one call by `caller`, escalations (a larger limit, a compaction) included: 1 + the row's retries. */
export function maxCallAttempts(caller: RetryCaller): number {
  return 1 + RETRY_TABLE[caller].transient.retries;
}

/**
 * Temporal's own retry of a model activity, for an attempt lost with its worker (heartbeat
 * timeout) and nothing else: every other failure is non-retryable for Temporal
 * (serverRetries 'timeouts_only') and comes back to the caller's row above. Read by
 * activities/llm-options.ts.
 */
export const LOST_ATTEMPT_RETRY = { attempts: 2, backoffMs: 1_000 } as const;

export type RetryDecision =
  | { readonly retry: true; readonly delayMs: number; readonly compact: boolean }
  | { readonly retry: false; readonly reason: string };

/**
 * Whether attempt `attempt` (1-based) of a call, which failed with `failureClass`, gets
 * another. Attempts before it count whatever their class: the budget is the whole call's.
 */
export function retryDecision(
  caller: RetryCaller,
  failureClass: ModelFailureClass,
  attempt: number,
  retryAfterMs: number | null | undefined,
  /**
   * A session's or goal's own backoff (tests shorten it): shorten-only — each wait is the
   * shorter of the override's and the table's — and it can lower the retries (one per
   * entry), never raise them.
   */
  backoffOverride?: readonly number[],
): RetryDecision {
  const rule = RETRY_TABLE[caller][failureClass];
  const overridden = backoffOverride !== undefined && rule.retries > 0 && !rule.compactFirst;
  const retries = overridden ? Math.min(rule.retries, backoffOverride.length) : rule.retries;
  const retriesSoFar = attempt - 1;
  if (retriesSoFar >= retries) {
    return { retry: false, reason: retries === 0 ? `${failureClass} failures are not retried` : `${failureClass}: ${retries} retries spent` };
  }
  const tableWait = rule.backoffMs[retriesSoFar] ?? rule.backoffMs.at(-1) ?? 0;
  const backoff = overridden ? Math.min(tableWait, backoffOverride[retriesSoFar] ?? backoffOverride.at(-1) ?? 0) : tableWait;
  const asked = rule.honoursRetryAfter && typeof retryAfterMs === 'number' ? retryAfterMs : 0;
  if (asked > rule.maxDelayMs) return { retry: false, reason: `the API asked to wait ${Math.round(asked / 1000)} s, more than ${rule.maxDelayMs / 1000} s` };
  return { retry: true, delayMs: Math.max(backoff, asked), compact: rule.compactFirst };
}

/** The class of an activity failure `type` (activities/llm-errors.ts MODEL_FAILURE values). */
export function failureClassOf(type: string | null | undefined, retryable: boolean): ModelFailureClass {
  switch (type ?? '') {
    case 'ModelRateLimited':
    case 'ModelOverloaded':
      return 'overloaded';
    case 'ModelContextWindowExceeded':
      return 'context_window';
    case 'ModelMalformedResponse':
      return 'malformed';
    default:
      return retryable ? 'transient' : 'fatal';
  }
}

/** The API-response fields of a failure's details when there was no response to describe (not sent, refused before it, a local fault). */
export const NO_RESPONSE = { status: null, errorType: null, apiMessage: null, requestId: null, inStream: false, retryAfterMs: null } as const;
