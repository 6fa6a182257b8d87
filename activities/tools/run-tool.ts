// Runs a tool of the registry by name with the model's raw input: the tool validates it
// with its schema (define-tool.ts), and every error the model can act on comes back as a
// result with is_error. Anything else (disk full, EIO, a bug) is thrown: that is an activity
// failure.
import { capResult } from './artifacts';
import { type ToolContext } from './context';
import { builtinTools, type RegisteredTool } from './definitions';
import { type ToolResult, toolError } from './result';

export async function executeTool(ctx: ToolContext, name: string, rawInput: unknown, tools: readonly RegisteredTool[] = builtinTools): Promise<ToolResult> {
  const tool = tools.find((t) => t.name === name);
  if (!tool) return toolError(`unknown tool ${JSON.stringify(name)}`);
  if (tool.execute === undefined) return toolError(`${name} is not run as an activity; the workflow handles it`);
  const result = await tool.execute(ctx, rawInput);
  return capResult(ctx.ws, result, { capBytes: ctx.outputCapBytes, callKey: ctx.callKey, label: name });
}
