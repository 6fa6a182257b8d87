// Turns an MCP tool result into the text the model gets.
import { type ToolResult } from '../tools/result';

interface McpContentBlock {
  type: string;
  text?: string;
  mimeType?: string;
  data?: string;
  uri?: string;
  name?: string;
  resource?: { uri?: string; text?: string; mimeType?: string; blob?: string };
}

export function renderMcpContent(answer: Record<string, unknown>): ToolResult {
  const blocks = Array.isArray(answer.content) ? (answer.content as McpContentBlock[]) : [];
  const parts = blocks.map(renderBlock);
  if (parts.length === 0 && answer.structuredContent !== undefined) parts.push(JSON.stringify(answer.structuredContent, null, 2));
  if (parts.length === 0 && 'toolResult' in answer) parts.push(JSON.stringify(answer.toolResult, null, 2));
  return { content: parts.join('\n') || '(no output)', is_error: answer.isError === true };
}

function renderBlock(block: McpContentBlock): string {
  switch (block.type) {
    case 'text':
      return block.text ?? '';
    case 'image':
    case 'audio':
      return `[${block.type} ${block.mimeType ?? ''}, ${Buffer.from(block.data ?? '', 'base64').length} bytes, not shown]`;
    case 'resource':
      return block.resource?.text ?? `[resource ${block.resource?.uri ?? ''}${block.resource?.mimeType ? ` (${block.resource.mimeType})` : ''}]`;
    case 'resource_link':
      return `[resource link ${block.uri ?? ''}${block.name ? ` (${block.name})` : ''}]`;
    default:
      return `[${block.type} content, not shown]`;
  }
}
