export { createMcpBridge, mcpActivityOptions, type CallMcpToolRequest, type McpBridge, type McpToolDescription, type McpToolList } from './activities';
export { McpConfig, McpServerConfig, parseMcpConfig, type McpConfigInput } from './config';
export { mcpToolName, parseMcpToolName } from './names';
