// How a task attempt's outcome is decided. A task agent ends its turn with the structured
// tool `finish_task {status, summary}` (offered beside its other tools; the turn machine
// records the call and calls the model no more). The decision is then:
//
// - a valid finish_task call decides: its status and its summary, however the turn ended
//   (the call is the last thing the turn does);
// - a turn that ended without one failed: either it stopped early (max steps, budget,
//   refusal, truncation, model failure, interrupt — the reason is the summary) or the model
//   answered in plain text without reporting, which says nothing about whether the work is
//   done. The goal retries a failed task (maxTaskAttempts), so a forgetful model costs one
//   attempt, never a wrong "succeeded".
import { z } from 'zod';
import type { TurnEnd } from './turn/outcome';
import { lazySchema } from './lazy-schema';

export const FINISH_TASK = 'finish_task';

export const finishTaskSchema = lazySchema(() => z.strictObject({
  status: z.enum(['succeeded', 'failed']).describe('succeeded: the task is done and checked; failed: it cannot be done (say why in the summary).'),
  summary: z.string().min(1).max(20_000).describe('What you did and how you checked it; for failed, why the task cannot be done.'),
}));
export type FinishTask = z.infer<typeof finishTaskSchema>;

export const FINISH_TASK_DESCRIPTION =
  'Finish your task: report whether it succeeded or failed, with a short summary. This ends your work on the task; ' +
  'call it once, after your last other tool call has returned.';

/** The model's finish_task input, checked: the value, or the problems to send back to it. */
export function parseFinishTask(input: unknown): { ok: true; value: FinishTask } | { ok: false; problems: string[] } {
  const parsed = finishTaskSchema.safeParse(input);
  if (parsed.success) return { ok: true, value: parsed.data };
  return { ok: false, problems: parsed.error.issues.map((i) => `${i.path.length > 0 ? i.path.join('.') : 'input'}: ${i.message}`) };
}

/** What the decision reads of a finished turn (machines/turn/protocol.ts TurnResult). */
export interface FinishedTurn {
  outcome: TurnEnd;
  error: string | null;
  finalOutput: string | null;
  finish?: FinishTask | undefined;
}

export interface TaskOutcome {
  outcome: 'succeeded' | 'failed';
  /** The agent's summary, or why the attempt failed. */
  summary: string;
  /** The agent's own words, for the evidence (its finish_task summary, else its last text). */
  agentSummary: string | null;
}

/** An agent started by a goal of the version before finish_task (its tools do not offer it)
 *  still runs on a new worker after a deploy: it was told to answer in text, starting with
 *  `TASK FAILED` when it could not do the task, and is judged by that rule. */
const LEGACY_FAILED_PREFIX = /^TASK FAILED:?\s*/i;

export function decideTaskOutcome(turn: FinishedTurn, options: { finishTaskOffered: boolean } = { finishTaskOffered: true }): TaskOutcome {
  const text = turn.finalOutput?.trim() ?? '';
  if (turn.finish !== undefined) return { outcome: turn.finish.status, summary: turn.finish.summary, agentSummary: turn.finish.summary };
  const agentSummary = text === '' ? null : text;
  if (turn.outcome === 'completed' && !options.finishTaskOffered) {
    return LEGACY_FAILED_PREFIX.test(text)
      ? { outcome: 'failed', summary: text.replace(LEGACY_FAILED_PREFIX, '') || 'the agent reported failure', agentSummary }
      : { outcome: 'succeeded', summary: text || 'done', agentSummary };
  }
  if (turn.outcome === 'completed') {
    return {
      outcome: 'failed',
      summary: `the agent ended its turn without calling ${FINISH_TASK}${text === '' ? '' : `; its last words: ${text.length > 2000 ? `${text.slice(0, 2000)}…` : text}`}`,
      agentSummary,
    };
  }
  return { outcome: 'failed', summary: `the agent's turn ended ${turn.outcome}${turn.error ? `: ${turn.error}` : ''}`, agentSummary };
}
