export { createToolActivities, type RunToolRequest, type ToolActivities, type ToolActivitiesConfig, type ToolDescription } from './activity';
export { builtinTools, findBuiltinTool, modelToolSpec, toolRegistry, ACTIVITY_WORKER_OPTIONS, type ModelToolSpec, type RegisteredTool, type RunnableTool, type ToolActivityOptions } from './definitions';
export { defineTool, DEFAULT_TOOL_ACTIVITY, ToolError, type DefinableKind, type ToolContext, type ToolDefinition, type ToolRun } from './define-tool';
export { interruptedToolResult, type InterruptionCause, type ToolResult } from './result';
export { executeTool } from './run-tool';
export { loadPolicy, type LoadedPolicy } from './policy-file';
