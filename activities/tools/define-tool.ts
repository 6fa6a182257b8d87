// defineTool: one call per tool gives the model its spec (the JSON Schema made from the zod
// input), the policy its kind, the workflow the local-activity choice and the activity
// options, and the worker a dispatch typed by the input: `run` is called only with input the
// schema accepted, as the schema's output type. Bad input and a ToolError come back to the
// model as a tool error, never as an activity failure. The pure half (the spec) is what the
// workflow and the policy read (machines/tool-spec.ts); the built-in tools' specs live there
// (machines/builtin-tools.ts) and are bound to their implementations by bindTool, typed the
// same way. docs/adding-a-tool.md.
import { type z } from 'zod';
import { type ActivityOptions as ToolActivityOptions, type ToolSpec, toolSpec } from '../../machines/tool-spec';
import { type ToolContext } from './context';
import { type ToolResult, toolError, toolOk } from './result';
import { ToolError } from './workspace';

/** What a tool's `run` gets besides its input: the workspace, the call's key, progress and cancellation. */
export type { ToolContext } from './context';

/** The implementation of a tool whose input schema is `Input`: it gets the parsed input. */
export type ToolRun<Input extends z.ZodType> = (input: z.output<Input>, ctx: ToolContext) => Promise<ToolResult | string>;

/** A tool the worker can run: its spec and `execute`, which validates the model's raw input and runs it. */
export interface RunnableTool<Name extends string = string> extends ToolSpec<Name, z.ZodType, ToolActivityOptions> {
  execute(ctx: ToolContext, rawInput: unknown): Promise<ToolResult>;
}

/** A tool of the registry: one the worker runs, or one the workflow handles (ask_user: a person answers it). */
export type RegisteredTool<Name extends string = string> = RunnableTool<Name> | (ToolSpec<Name, z.ZodType, undefined> & { execute?: undefined });

/**
 * A record of implementations for a list of specs, one per name: a spec left without an
 * implementation is a missing property, an implementation without a spec an unknown one (the
 * built-in tools' registry is typed by it: definitions.ts).
 */
export type Implementations<Spec extends ToolSpec> = { [S in Extract<Spec, { activity: ToolActivityOptions }> as S['name']]: RunnableTool<S['name']> };

/** The kinds a tool defined outside Keel may have: `interact` is ask_user's, which the workflow handles. */
export type DefinableKind = 'read' | 'write' | 'execute';

export interface ToolDefinition<Name extends string, Input extends z.ZodType> {
  /** What the model calls it: 1-128 letters, digits, _ or -; not a built-in tool's name, not mcp__…. */
  name: Name;
  /** What the model is told the tool does and when to use it. */
  description: string;
  /** The input, as a zod object schema: validates the model's input, and is the JSON Schema the model sees. */
  input: Input;
  /** What it can do to the world: the policy's modes decide by it (read: allowed; write and execute: as the mode says). */
  kind: DefinableKind;
  /** Run as a local activity where it can (a quick, bounded `read` tool only). Default false. */
  local?: boolean;
  /** The activity's options; default: 60 s to run, a heartbeat every 10 s, 3 tries. */
  activity?: ToolActivityOptions;
  /** Does the work. A string is the result; throw a ToolError for a failure the model can act on. */
  run: ToolRun<Input>;
}

/** A tool's activity options when its definition gives none: like read_file's. */
export const DEFAULT_TOOL_ACTIVITY: ToolActivityOptions = {
  startToCloseTimeout: 60_000,
  heartbeatTimeout: 10_000,
  retry: { maximumAttempts: 3, initialInterval: 500, backoffCoefficient: 2, maximumInterval: 5_000 },
};

/**
 * Defines a tool: the one thing to write to add one (registered with
 * `createKeelWorker({ tools: [...] })`). The input type of `run` is inferred from `input`.
 */
export function defineTool<const Name extends string, Input extends z.ZodType>(definition: ToolDefinition<Name, Input>): RunnableTool<Name> {
  const spec = toolSpec({
    name: definition.name,
    description: definition.description,
    input: definition.input,
    kind: definition.kind,
    activity: definition.activity ?? DEFAULT_TOOL_ACTIVITY,
    local: definition.local ?? false,
  });
  return bindTool(spec, definition.run);
}

/**
 * Binds a spec to its implementation, typed by the spec's input. The model's input is
 * validated first: what does not parse is answered as a tool error naming each problem.
 */
export function bindTool<const Name extends string, Input extends z.ZodType>(spec: ToolSpec<Name, Input, ToolActivityOptions>, run: ToolRun<Input>): RunnableTool<Name> {
  return {
    ...spec,
    async execute(ctx, rawInput) {
      const parsed = spec.input.safeParse(rawInput ?? {});
      if (!parsed.success) {
        const problems = parsed.error.issues.map((issue) => `- ${issue.path.length ? issue.path.join('.') : 'input'}: ${issue.message}`);
        return toolError(`invalid input for ${spec.name}:\n${problems.join('\n')}`);
      }
      try {
        const result = await run(parsed.data, ctx);
        return typeof result === 'string' ? toolOk(result) : result;
      } catch (error) {
        if (error instanceof ToolError) return toolError(`${spec.name}: ${error.message}`);
        throw error;
      }
    },
  };
}

export { ToolError } from './workspace';
