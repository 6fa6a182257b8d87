// What every tool hands back to the model: text, and whether it is an error. Errors the
// model can act on (missing file, bad regex, non-zero exit, malformed input) travel
// here with is_error; only infrastructure faults fail the activity.

export interface ToolResult {
  content: string;
  is_error: boolean;
  /** Workspace-relative path of the full output when `content` was truncated. */
  artifact?: string;
  /** Bytes of output left out of `content` (all of them are in the artifact). */
  truncated_bytes?: number;
  /** The tool stopped at its own time limit (a command's timeout_seconds): the call ends as `timed_out`. */
  timed_out?: true;
}

export function toolOk(content: string): ToolResult {
  return { content, is_error: false };
}

export function toolError(content: string): ToolResult {
  return { content, is_error: true };
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
