// A tool as the model, the policy and the workflow see it: its name, what it tells the model,
// the schema of its input, its kind (what it can do to the world, the terms the policy's modes
// are written in), and how a call of it runs. Pure data, so workflow code and the policy may
// read it; what a call does is bound to it on the activity side (activities/tools/define-tool.ts),
// typed by the same input schema. docs/adding-a-tool.md.
import { z } from 'zod';
import { lazySchema } from './lazy-schema';

/**
 * What a tool can do to the world; the modes are defined in these terms. `mcp`, `client` and
 * `unknown` are what a call is when no definition says more: a tool of an MCP server, a tool a
 * client declared with its message (workflows/client-tools.ts), a name nobody defined.
 */
export type ToolKind = 'read' | 'write' | 'execute' | 'interact' | 'mcp' | 'client' | 'unknown';

/** The kinds a definition may declare. */
export type DefinedToolKind = Extract<ToolKind, 'read' | 'write' | 'execute' | 'interact'>;
export const definedToolKinds = ['read', 'write', 'execute', 'interact'] as const satisfies readonly DefinedToolKind[];

const ms = lazySchema(() => z.number().int().positive());

/**
 * Plain-data activity options of a tool's activity (durations in ms), ready for
 * proxyActivities: every built-in, defined and MCP tool names these three, nothing else. The
 * tool entry a run carries is checked against it (workflows/protocol/tool-entry.ts, which
 * names the type ToolActivityOptions).
 */
export const toolActivityOptionsSchema = lazySchema(() => z.strictObject({
  startToCloseTimeout: ms,
  heartbeatTimeout: ms,
  retry: z.strictObject({
    maximumAttempts: z.number().int().positive(),
    initialInterval: ms.optional(),
    backoffCoefficient: z.number().min(1).optional(),
    maximumInterval: ms.optional(),
    nonRetryableErrorTypes: z.array(z.string()).optional(),
  }),
}));
/** A tool's activity options (ToolActivityOptions of the tool entry: the same schema). */
export type ActivityOptions = z.output<typeof toolActivityOptionsSchema>;

/** A tool's description for the model, its input and its kind, and where its calls run. */
export interface ToolSpec<Name extends string = string, Input extends z.ZodType = z.ZodType, Activity extends ActivityOptions | undefined = ActivityOptions | undefined> {
  readonly name: Name;
  readonly description: string;
  /** Validates the model's input; the JSON Schema the model sees is made from it. */
  readonly input: Input;
  readonly kind: DefinedToolKind;
  /** Read-only tools of one step may run in parallel; the others run one at a time (the kind says it). */
  readonly readOnly: boolean;
  /** The options of the activity a call runs in; undefined for ask_user, which the workflow handles. */
  readonly activity: Activity;
  /**
   * Quick and bounded (one file, one directory): a session on a shared workspace runs it as a
   * local activity, in the workflow task that asked for it — no task-queue round trip, and a
   * marker instead of three activity events and the workflow task its result would wake
   * (workflows/turn-tools.ts). Only a `read` tool may: anything else, or anything that runs
   * long (it could not heartbeat its progress nor hear of a cancel), stays an activity.
   */
  readonly local: boolean;
}

/** The fields a definition is written with; `readOnly` follows from the kind, `local` defaults to false. */
export interface ToolSpecInput<Name extends string, Input extends z.ZodType, Activity extends ActivityOptions | undefined> {
  name: Name;
  description: string;
  input: Input;
  kind: DefinedToolKind;
  activity: Activity;
  local?: boolean;
}

/** Anthropic's rule for a tool name (the API refuses others). */
export const TOOL_NAME = /^[a-zA-Z0-9_-]{1,128}$/;

/**
 * A tool's spec, checked: a name the API takes, a description, and `local` only for a `read`
 * tool that runs as an activity. Thrown when it is wrong: a definition is code, read once when
 * the worker starts, so a mistake in it stops the worker rather than a session later.
 */
export function toolSpec<const Name extends string, Input extends z.ZodType, Activity extends ActivityOptions | undefined>(spec: ToolSpecInput<Name, Input, Activity>): ToolSpec<Name, Input, Activity> {
  if (!TOOL_NAME.test(spec.name)) throw new Error(`tool ${JSON.stringify(spec.name)}: a tool name is 1-128 letters, digits, _ or -`);
  // The policy takes every mcp__ name for an MCP server's tool (machines/policy/tool-kinds.ts).
  if (spec.name.startsWith('mcp__')) throw new Error(`tool ${spec.name}: names starting with mcp__ are the MCP servers' tools`);
  if (spec.description.trim() === '') throw new Error(`tool ${spec.name}: the model needs a description`);
  if (!(definedToolKinds as readonly string[]).includes(spec.kind)) throw new Error(`tool ${spec.name}: kind ${JSON.stringify(spec.kind)} is not one of ${definedToolKinds.join(', ')}`);
  const local = spec.local ?? false;
  if (local && (spec.kind !== 'read' || spec.activity === undefined)) throw new Error(`tool ${spec.name}: only a read tool run as an activity may run as a local activity`);
  return { name: spec.name, description: spec.description, input: spec.input, kind: spec.kind, readOnly: spec.kind === 'read', activity: spec.activity, local };
}
