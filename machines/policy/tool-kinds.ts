// What a tool can do to the world (read, write, execute, …): the terms the policy's modes are
// defined in.

/** What a tool can do to the world; the modes are defined in these terms. */
export type ToolKind = 'read' | 'write' | 'execute' | 'interact' | 'mcp' | 'unknown';

/** The built-in tools and their kinds: the one table tool definitions also read. */
export const builtinToolKinds = {
  read_file: 'read',
  list_dir: 'read',
  glob: 'read',
  grep: 'read',
  write_file: 'write',
  edit_file: 'write',
  run_command: 'execute',
  ask_user: 'interact',
} as const satisfies Record<string, ToolKind>;

export type BuiltinToolName = keyof typeof builtinToolKinds;

export const MCP_TOOL_PREFIX = 'mcp__';

export function toolKind(tool: string): ToolKind {
  if (Object.hasOwn(builtinToolKinds, tool)) return builtinToolKinds[tool as BuiltinToolName];
  if (tool.startsWith(MCP_TOOL_PREFIX)) return 'mcp';
  return 'unknown';
}
