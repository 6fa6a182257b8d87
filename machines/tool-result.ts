// What every tool hands back to the model: text, and whether it is an error. Errors the
// model can act on (missing file, bad regex, non-zero exit, malformed input) travel
// here with is_error; only infrastructure faults fail the activity.
import { z } from 'zod';
import { scriptHashesSchema } from './script-hashes';
import { lazySchema } from './lazy-schema';
import type { StoredOutput } from './stored-output';

/** The sandbox limits a command can hit (activities/tools/limits.ts). */
export const limitKindSchema = lazySchema(() => z.enum(['memory', 'processes', 'cpu', 'file-size', 'tmp-space', 'open-files', 'disk']));
export type LimitKind = z.infer<typeof limitKindSchema>;

/**
 * What a tool did, as data beside the text the model reads: the workflow folds evidence
 * (machines/evidence.ts) from these fields and never parses the text back. One variant
 * per kind of fact; a tool without facts (list_dir, glob, MCP tools) sends none.
 */
export const toolFactsSchema = lazySchema(() => z.discriminatedUnion('kind', [
  /** run_command: what ran and how it ended (exitCode null: killed, timed out, never started). */
  z.strictObject({
    kind: z.literal('command'),
    command: z.string().max(20_000),
    exitCode: z.number().int().nullable(),
    timedOut: z.boolean(),
    /** Bytes of combined output and lines in it. */
    bytes: z.number().int().nonnegative(),
    lines: z.number().int().nonnegative(),
    /** The sandbox limit that ended it, when one did (activities/tools/limits.ts). */
    limit: limitKindSchema.optional(),
    /** The workspace files it ran (a script, package.json, a Makefile) by content hash, read just before it ran. */
    scripts: scriptHashesSchema.optional(),
  }),
  /** write_file / edit_file: the workspace-relative files it changed. */
  z.strictObject({ kind: z.literal('files_changed'), filesChanged: z.array(z.string().max(4096)).max(1000) }),
  /** read_file / grep: bytes read from the workspace. */
  z.strictObject({ kind: z.literal('read'), bytes: z.number().int().nonnegative(), files: z.number().int().nonnegative() }),
  /** The worker refused to run the call at all: no sandbox, or a file it runs changed after its approval. Says why, so a failed task can. */
  z.strictObject({ kind: z.literal('refused'), reason: z.enum(['sandbox_unavailable', 'script_changed']) }),
]));
export type ToolFacts = z.infer<typeof toolFactsSchema>;

/** Facts from an activity's result, checked (it is input from outside): invalid facts are dropped, never trusted. */
export function parseToolFacts(raw: unknown): ToolFacts | undefined {
  if (raw === undefined) return undefined;
  const parsed = toolFactsSchema.safeParse(raw);
  return parsed.success ? parsed.data : undefined;
}

export interface ToolResult {
  content: string;
  is_error: boolean;
  /** Workspace-relative path of the full output when `content` was truncated. */
  artifact?: string;
  /** Bytes of output left out of `content` (all of them are in the artifact). */
  truncated_bytes?: number;
  /** The tool stopped at its own time limit (a command's timeout_seconds): the call ends as `timed_out`. */
  timed_out?: true;
  /** What the tool did, as data (exit code, files changed, bytes read). */
  facts?: ToolFacts;
  /** `content` is a preview: the whole text is in the conversation store (machines/stored-output.ts). */
  stored?: StoredOutput;
  /** A local call's own run time, measured by the worker: what its result is stamped from (localResultTime). */
  ran_ms?: number;
}

/** Longer than any local call may run (machines/local-budget.ts): a larger `ran_ms` is not believed. */
const MAX_LOCAL_RUN_MS = 10 * 60_000;

/**
 * When a local call's result happened, on the workflow's clock: the time the call was sent plus
 * its own run time, both in the run's history. Why not the workflow's clock when the result
 * arrives: the activation that delivers a local activity's result does not read the same time in
 * every execution of the run (a replay read a quick read's result ~60 ms later than the run that
 * recorded it, so a reader resuming the stream saw an event change under it). `null` when the
 * result carries no run time (a worker from before it): the workflow's clock, as those runs recorded.
 */
export function localResultTime(sentAt: number, result: Pick<ToolResult, 'ran_ms'>): number | null {
  const ran = result.ran_ms;
  if (typeof ran !== 'number' || !Number.isFinite(ran) || ran < 0) return null;
  return sentAt + Math.min(Math.round(ran), MAX_LOCAL_RUN_MS);
}

export function toolOk(content: string, facts?: ToolFacts): ToolResult {
  return facts === undefined ? { content, is_error: false } : { content, is_error: false, facts };
}

export function toolError(content: string): ToolResult {
  return { content, is_error: true };
}

export type RefusalReason = Extract<ToolFacts, { kind: 'refused' }>['reason'];

/** The words a person reads for a refusal: "run_command refused: sandbox unavailable". */
export function refusalText(tool: string, reason: RefusalReason): string {
  switch (reason) {
    case 'sandbox_unavailable':
      return `${tool} refused: sandbox unavailable`;
    case 'script_changed':
      return `${tool} refused: a file it runs changed after it was approved`;
  }
}

/** A call the worker refused to run; `detail` says what to do about it. */
export function toolRefused(tool: string, reason: RefusalReason, detail: string): ToolResult {
  return { content: `${refusalText(tool, reason)} — ${detail}`, is_error: true, facts: { kind: 'refused', reason } };
}

/** Why a tool activity ended without a result of its own. */
export type InterruptionCause = 'cancelled' | 'timed_out' | 'worker_lost' | 'failed';

/**
 * The result the workflow gives the model when a tool activity ended without one —
 * cancelled, timed out, or lost with its worker (heartbeat timeout). A command may
 * have run partly: the model must not assume it did nothing, nor that it finished.
 */
export function interruptedToolResult(tool: string, cause: InterruptionCause, detail?: string): ToolResult {
  const suffix = detail ? ` (${detail})` : '';
  const partial =
    tool === 'run_command'
      ? ' The command may have run partly: check its effects before running it again.'
      : tool === 'write_file' || tool === 'edit_file'
        ? ' The file may or may not have been changed: read it before retrying.'
        : '';
  switch (cause) {
    case 'cancelled':
      return toolError(`${tool} was cancelled before it finished${suffix}.${partial}`);
    case 'timed_out':
      return toolError(`${tool} was interrupted: it ran out of time${suffix}.${partial}`);
    case 'worker_lost':
      return toolError(`${tool} was interrupted: the worker running it stopped responding${suffix}.${partial}`);
    case 'failed':
      return toolError(`${tool} failed for a reason outside the tool${suffix}.${partial}`);
    default: {
      const never: never = cause;
      throw new Error(`unknown interruption cause ${String(never)}`);
    }
  }
}

/**
 * The failure type of a tool activity stopped because its worker shut down (after the
 * worker's grace time), not because the session cancelled it: the turn runs it again.
 */
export const WORKER_SHUTDOWN_FAILURE = 'WorkerShutdown';
