// Runs a built-in tool by name with the model's raw input: the input is validated with
// the tool's schema, and every error the model can act on comes back as a result with
// is_error. Anything else (disk full, EIO, a bug) is thrown: that is an activity failure.
import { type z } from 'zod';
import { capResult } from './artifacts';
import { type ToolContext } from './context';
import { findBuiltinTool } from './definitions';
import { editFile, type editFileInput } from './edit-file';
import { glob, type globInput } from './glob';
import { grep, type grepInput } from './grep';
import { listDir, type listDirInput } from './list-dir';
import { readFile, type readFileInput } from './read-file';
import { type ToolResult, toolError } from './result';
import { runCommand, type runCommandInput } from './run-command';
import { ToolError } from './workspace';
import { writeFile, type writeFileInput } from './write-file';

export type ExecutableTool = 'read_file' | 'list_dir' | 'glob' | 'grep' | 'write_file' | 'edit_file' | 'run_command';

export async function executeTool(ctx: ToolContext, name: string, rawInput: unknown): Promise<ToolResult> {
  const tool = findBuiltinTool(name);
  if (!tool) return toolError(`unknown tool ${JSON.stringify(name)}`);
  if (!tool.activity) return toolError(`${name} is not run as an activity; the workflow handles it`);
  const parsed = tool.input.safeParse(rawInput ?? {});
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `- ${issue.path.length ? issue.path.join('.') : 'input'}: ${issue.message}`);
    return toolError(`invalid input for ${name}:\n${problems.join('\n')}`);
  }
  let result: ToolResult;
  try {
    result = await dispatch(ctx, name as ExecutableTool, parsed.data);
  } catch (error) {
    if (error instanceof ToolError) return toolError(`${name}: ${error.message}`);
    throw error;
  }
  return capResult(ctx.ws, result, { capBytes: ctx.outputCapBytes, callKey: ctx.callKey, label: name });
}

function dispatch(ctx: ToolContext, name: ExecutableTool, input: unknown): Promise<ToolResult> {
  switch (name) {
    case 'read_file':
      return readFile(ctx, input as z.infer<typeof readFileInput>);
    case 'list_dir':
      return listDir(ctx, input as z.infer<typeof listDirInput>);
    case 'glob':
      return glob(ctx, input as z.infer<typeof globInput>);
    case 'grep':
      return grep(ctx, input as z.infer<typeof grepInput>);
    case 'write_file':
      return writeFile(ctx, input as z.infer<typeof writeFileInput>);
    case 'edit_file':
      return editFile(ctx, input as z.infer<typeof editFileInput>);
    case 'run_command':
      return runCommand(ctx, input as z.infer<typeof runCommandInput>);
    default: {
      const never: never = name;
      throw new Error(`no implementation for ${String(never)}`);
    }
  }
}
