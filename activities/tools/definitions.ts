// The registry of tools the worker runs: the built-in ones — each spec (machines/builtin-tools.ts)
// bound to its implementation here, by name, typed by its input — then the worker's own,
// defined with defineTool. The model's spec (the JSON Schema made from the zod input) and
// the activity options listTools hands the workflow come from the same objects.
import { z } from 'zod';
import { builtinToolSpecs, type BuiltinToolSpec, editFileSpec, globSpec, grepSpec, listDirSpec, readFileSpec, runCommandSpec, writeFileSpec } from '../../machines/builtin-tools';
import { MCP_TOOL_PREFIX } from '../../machines/policy';
import type { ToolEntry } from '../../workflows/protocol/tool-entry';
import { bindTool, type Implementations, type RegisteredTool, type RunnableTool } from './define-tool';
import { editFile } from './edit-file';
import { glob } from './glob';
import { grep } from './grep';
import { listDir } from './list-dir';
import { readFile } from './read-file';
import { runCommand } from './run-command';
import { writeFile } from './write-file';

/** Plain-data activity options (durations in ms), ready for proxyActivities: the tool entry's schema says what they are. */
export type { ToolActivityOptions } from '../../workflows/protocol/tool-entry';
export type { RegisteredTool, RunnableTool } from './define-tool';

/** What the model is given for each tool (Anthropic Messages API `tools` entry): the tool entry's `spec`. */
export type ModelToolSpec = ToolEntry['spec'];

/**
 * Every built-in tool that runs as an activity: its spec bound to its implementation, which
 * takes the input its spec's schema gives. The type names each spec: a spec left without an
 * implementation is a missing property, an implementation without a spec an unknown one,
 * and one of another input a type error — none compiles.
 */
const runnable: Implementations<BuiltinToolSpec> = {
  read_file: bindTool(readFileSpec, (input, ctx) => readFile(ctx, input)),
  list_dir: bindTool(listDirSpec, (input, ctx) => listDir(ctx, input)),
  glob: bindTool(globSpec, (input, ctx) => glob(ctx, input)),
  grep: bindTool(grepSpec, (input, ctx) => grep(ctx, input)),
  write_file: bindTool(writeFileSpec, (input, ctx) => writeFile(ctx, input)),
  edit_file: bindTool(editFileSpec, (input, ctx) => editFile(ctx, input)),
  run_command: bindTool(runCommandSpec, (input, ctx) => runCommand(ctx, input)),
};

/** The built-in tools in the order the model is offered them; ask_user, which a person answers, has no implementation. */
export const builtinTools: readonly RegisteredTool[] = builtinToolSpecs.map((spec): RegisteredTool => (spec.activity === undefined ? spec : runnable[spec.name]));
export function findBuiltinTool(name: string): RegisteredTool | undefined {
  return builtinTools.find((tool) => tool.name === name);
}

/**
 * The built-in tools and the worker's own after them. A name used twice, or an own tool
 * named like a built-in one or an MCP server's, stops the worker at start: which of the two
 * a call meant could not be told.
 */
export function toolRegistry(own: readonly RunnableTool[] = []): readonly RegisteredTool[] {
  const seen = new Set(builtinTools.map((tool) => tool.name));
  for (const tool of own) {
    if (tool.name.startsWith(MCP_TOOL_PREFIX)) throw new Error(`tool ${tool.name}: names starting with ${MCP_TOOL_PREFIX} are the MCP servers' tools`);
    if (seen.has(tool.name)) throw new Error(`tool ${tool.name} is defined twice (or is a built-in tool's name)`);
    seen.add(tool.name);
  }
  return [...builtinTools, ...own];
}

// A tool's spec never changes while the worker runs, and every session's setup asks for all of
// them: zod's JSON Schema conversion is done once per tool (it was ~1.7 ms of worker CPU a
// session; bench allocation profile 2026-11-28). Shared, so read-only.
const specs = new WeakMap<RegisteredTool, ModelToolSpec>();

export function modelToolSpec(tool: RegisteredTool): ModelToolSpec {
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
