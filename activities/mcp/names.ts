// The names MCP tools have for the model: mcp__<server>__<tool>.
import { MCP_TOOL_PREFIX } from '../../machines/policy';

export function mcpToolName(server: string, tool: string): string {
  return `${MCP_TOOL_PREFIX}${server}__${tool}`;
}

export function parseMcpToolName(name: string): { server: string; tool: string } | undefined {
  if (!name.startsWith(MCP_TOOL_PREFIX)) return undefined;
  const rest = name.slice(MCP_TOOL_PREFIX.length);
  const at = rest.indexOf('__');
  if (at <= 0 || at + 2 >= rest.length) return undefined;
  return { server: rest.slice(0, at), tool: rest.slice(at + 2) };
}
