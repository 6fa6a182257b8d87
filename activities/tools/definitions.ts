// The registry of built-in tools, as plain data: name, description for the model,
// input schema (zod, which also yields the JSON schema the model sees), kind
// (read-only or not, from the policy's table), and the activity options that fit.
import { z } from 'zod';
import { builtinToolKinds, type BuiltinToolName, type ToolKind } from '../../machines/policy';
import type { ToolActivityOptions, ToolEntry } from '../../workflows/protocol/tool-entry';
import { ASK_USER_DESCRIPTION, askUserInput } from './ask-user';
import { EDIT_FILE_DESCRIPTION, editFileInput } from './edit-file';
import { GLOB_DESCRIPTION, globInput } from './glob';
import { GREP_DESCRIPTION, grepInput } from './grep';
import { LIST_DIR_DESCRIPTION, listDirInput } from './list-dir';
import { READ_FILE_DESCRIPTION, readFileInput } from './read-file';
import { MAX_COMMAND_TIMEOUT_SECONDS, RUN_COMMAND_DESCRIPTION, runCommandInput } from './run-command';
import { WRITE_FILE_DESCRIPTION, writeFileInput } from './write-file';

/** Plain-data activity options (durations in ms), ready for proxyActivities: the tool entry's schema says what they are. */
export type { ToolActivityOptions };

export interface ToolDefinition {
  name: string;
  description: string;
  input: z.ZodType;
  kind: ToolKind;
  /** Read-only tools of one step may run in parallel; the others run one at a time. */
  readOnly: boolean;
  /** Absent for ask_user, which the workflow handles without an activity. */
  activity: ToolActivityOptions | undefined;
  /**
   * Quick and bounded (one file, one directory): a session on a shared workspace runs it as
   * a local activity, in the workflow task that asked for it — no task-queue round trip, and
   * a marker instead of three activity events and the workflow task its result would wake
   * (workflows/turn-tools.ts). The walks (glob, grep) stay activities: they can run long, and
   * heartbeat their progress and hear of a cancel that way.
   */
  local: boolean;
}

/** What the model is given for each tool (Anthropic Messages API `tools` entry): the tool entry's `spec`. */
export type ModelToolSpec = ToolEntry['spec'];

const fileRetry = { maximumAttempts: 3, initialInterval: 500, backoffCoefficient: 2, maximumInterval: 5_000 };

// Quick filesystem work: short timeouts, a few retries (they are idempotent).
const readActivity: ToolActivityOptions = { startToCloseTimeout: 60_000, heartbeatTimeout: 10_000, retry: fileRetry };
const writeActivity: ToolActivityOptions = { startToCloseTimeout: 30_000, heartbeatTimeout: 10_000, retry: fileRetry };
/**
 * A command runs at most once. Its own timeout (the input's timeout_seconds) ends it
 * first; startToClose is a backstop above the largest allowed. A short heartbeat
 * timeout is how a dead worker is noticed, and heartbeats are how cancellation arrives.
 */
const commandActivity: ToolActivityOptions = {
  startToCloseTimeout: (MAX_COMMAND_TIMEOUT_SECONDS + 60) * 1000,
  heartbeatTimeout: 5_000,
  retry: { maximumAttempts: 1 },
};

function define(name: BuiltinToolName, description: string, input: z.ZodType, activity: ToolActivityOptions | undefined, local = false): ToolDefinition {
  const kind = builtinToolKinds[name];
  return { name, description, input, kind, readOnly: kind === 'read', activity, local };
}

export const builtinTools: readonly ToolDefinition[] = [
  define('read_file', READ_FILE_DESCRIPTION, readFileInput, readActivity, true),
  define('list_dir', LIST_DIR_DESCRIPTION, listDirInput, readActivity, true),
  define('glob', GLOB_DESCRIPTION, globInput, readActivity),
  define('grep', GREP_DESCRIPTION, grepInput, readActivity),
  define('write_file', WRITE_FILE_DESCRIPTION, writeFileInput, writeActivity),
  define('edit_file', EDIT_FILE_DESCRIPTION, editFileInput, writeActivity),
  define('run_command', RUN_COMMAND_DESCRIPTION, runCommandInput, commandActivity),
  define('ask_user', ASK_USER_DESCRIPTION, askUserInput, undefined),
];

export function findBuiltinTool(name: string): ToolDefinition | undefined {
  return builtinTools.find((tool) => tool.name === name);
}

// A tool's spec never changes while the worker runs, and every session's setup asks for all of
// them: zod's JSON Schema conversion is done once per tool (it was ~1.7 ms of worker CPU a
// session; bench allocation profile 2026-11-28). Shared, so read-only.
const specs = new WeakMap<ToolDefinition, ModelToolSpec>();

export function modelToolSpec(tool: ToolDefinition): ModelToolSpec {
  let spec = specs.get(tool);
  if (spec === undefined) {
    const schema = z.toJSONSchema(tool.input, { io: 'input' }) as Record<string, unknown>;
    delete schema.$schema;
    spec = deepFreeze({ name: tool.name, description: tool.description, input_schema: schema });
    specs.set(tool, spec);
  }
  return spec;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/**
 * Worker options every activity needs (the tools and the model; worker/worker.ts, the
 * bench's floor). The SDK sends heartbeats at most every 80% of the heartbeat timeout by
 * default, and a cancel only arrives with a heartbeat's answer: the cap makes it arrive
 * within a second. The model activity's heartbeats also carry the text so far, which
 * clients read from the server (client/live-model.ts): at 50 ms its first text is there
 * within ~50 ms. After that the model activity heartbeats at its deltas' pace (~150 ms), so
 * a long answer someone reads costs the server ~7 heartbeats a second, one nobody reads two
 * (activities/live-readers.ts; a heartbeat is ~6 ms of server CPU, a stream signal ~18 ms and
 * a workflow task: bench/delta-channel.ts). A
 * tool's progress heartbeats are rationed by the tool (250 ms, activities/tools/progress.ts).
 */
export const ACTIVITY_WORKER_OPTIONS = { maxHeartbeatThrottleInterval: '50 milliseconds' } as const;
