// What a tool can do to the world (read, write, execute, …): the terms the policy's modes are
// defined in. A built-in tool's kind is its spec's (machines/builtin-tools.ts); a tool defined
// with defineTool carries its own kind in the setup's tool list (the workflow passes it with the
// call); anything else is an MCP server's tool by its name, or unknown.
import { builtinToolSpecs, type BuiltinToolName } from '../builtin-tools';
import type { ToolKind } from '../tool-spec';

export type { ToolKind } from '../tool-spec';
export type { BuiltinToolName } from '../builtin-tools';

/** The built-in tools and their kinds, from their specs: the table no definition can override. */
export const builtinToolKinds: Readonly<Record<BuiltinToolName, ToolKind>> = Object.fromEntries(builtinToolSpecs.map((spec) => [spec.name, spec.kind])) as Record<BuiltinToolName, ToolKind>;

export const MCP_TOOL_PREFIX = 'mcp__';

/**
 * The kind of a call of `tool`. `declared`: the kind its definition gave (a tool defined with
 * defineTool, from the setup's list; `client` for a tool a client declared). A built-in name
 * and an MCP name are always judged as what they are, whatever is declared: the list is data
 * (a hand-started agent's input carries it), and a declaration must not turn run_command
 * into a read.
 */
export function toolKind(tool: string, declared?: ToolKind): ToolKind {
  if (Object.hasOwn(builtinToolKinds, tool)) return builtinToolKinds[tool as BuiltinToolName];
  if (tool.startsWith(MCP_TOOL_PREFIX)) return 'mcp';
  return declared ?? 'unknown';
}
