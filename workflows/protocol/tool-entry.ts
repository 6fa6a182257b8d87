// A tool as a run holds it: what the setup activity lists (activities/setup.ts), what a
// session or goal carries through continue-as-new, and what a goal hands each task agent in
// its start input (./agent.ts). One schema, and the types derived from it: the agent's input
// is checked against it, and the setup activity builds entries of its type.
import { z } from 'zod';
import { lazySchema } from '../../machines/lazy-schema';

const ms = lazySchema(() => z.number().int().positive());

/**
 * Plain-data activity options of a tool's activity (durations in ms), ready for
 * proxyActivities: every built-in and MCP tool names these three, nothing else
 * (activities/tools/definitions.ts, activities/mcp/activities.ts).
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
}));
/** A tool the model may call, as the setup activity lists it and a run carries it. */
export type ToolEntry = z.output<typeof toolEntrySchema>;
