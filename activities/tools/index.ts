export { createToolActivities, type RunToolRequest, type ToolActivities, type ToolActivitiesConfig, type ToolDescription } from './activity';
export { builtinTools, findBuiltinTool, modelToolSpec, ACTIVITY_WORKER_OPTIONS, type ModelToolSpec, type ToolActivityOptions, type ToolDefinition } from './definitions';
export { interruptedToolResult, type InterruptionCause, type ToolResult } from './result';
export { executeTool } from './run-tool';
export { loadPolicy, type LoadedPolicy } from './policy-file';
