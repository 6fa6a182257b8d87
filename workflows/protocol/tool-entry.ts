// A tool as a run holds it: what the setup activity lists (activities/setup.ts), what a
// session or goal carries through continue-as-new, and what a goal hands each task agent in
// its start input (./agent.ts). One schema, and the types derived from it: the agent's input
// is checked against it, and the setup activity builds entries of its type.
import { z } from 'zod';
import { lazySchema } from '../../machines/lazy-schema';
import { definedToolKinds, toolActivityOptionsSchema } from '../../machines/tool-spec';

/**
 * Plain-data activity options of a tool's activity (durations in ms), ready for
 * proxyActivities: every built-in, defined and MCP tool names these three, nothing else
 * (machines/tool-spec.ts holds the schema, where the tools' pure specs use it too).
 */
export { toolActivityOptionsSchema };
export type ToolActivityOptions = z.output<typeof toolActivityOptionsSchema>;

/** What the model is given for a tool (the Messages API's `tools` entry). */
export const toolSpecSchema = lazySchema(() => z.object({ name: z.string().min(1), description: z.string(), input_schema: z.record(z.string(), z.unknown()) }));

export const toolEntrySchema = lazySchema(() => z.object({
  spec: toolSpecSchema,
  readOnly: z.boolean(),
  /** Absent for ask_user (a person answers it) and finish_task (the agent's own answer). */
  activityOptions: toolActivityOptionsSchema.optional(),
  mcp: z.boolean().optional(),
  /** A quick built-in tool a session on a shared workspace runs as a local activity (activities/tools/definitions.ts). */
  local: z.boolean().optional(),
  /**
   * A tool the worker defined (defineTool): its kind, which the policy judges it by. Absent for
   * the built-in tools (the policy's own table knows them: machines/builtin-tools.ts), an MCP
   * server's and a run's own (finish_task), and in runs set up before tools could be defined.
   */
  kind: z.enum(definedToolKinds).optional(),
}));
/** A tool the model may call, as the setup activity lists it and a run carries it. */
export type ToolEntry = z.output<typeof toolEntrySchema>;
