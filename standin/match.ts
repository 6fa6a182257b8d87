// What a rule can match on, read from a Messages API request body, and the matching.
import type { Match } from './scenario';

export interface RequestFacts {
  /** The nth request the server received (1-based). */
  request: number;
  /** Assistant messages in the request + 1. */
  turn: number;
  model: string;
  stream: boolean;
  lastUserText: string;
  hasToolResults: boolean;
  tools: string[];
  systemText: string;
}

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter(isObject)
    .map((block) => {
      if (block.type === 'text' && typeof block.text === 'string') return block.text;
      // Tool results carry text too; a rule may want to match on what a tool said.
      if (block.type === 'tool_result') return textOf(block.content);
      return '';
    })
    .filter((text) => text.length > 0)
    .join('\n');
}

export function factsOf(body: Json, request: number): RequestFacts {
  const messages = Array.isArray(body.messages) ? body.messages.filter(isObject) : [];
  const lastUser = [...messages].reverse().find((message) => message.role === 'user');
  const lastUserContent = lastUser?.content;
  return {
    request,
    turn: messages.filter((message) => message.role === 'assistant').length + 1,
    model: typeof body.model === 'string' ? body.model : '',
    stream: body.stream === true,
    lastUserText: textOf(lastUserContent),
    hasToolResults:
      Array.isArray(lastUserContent) && lastUserContent.some((block) => isObject(block) && block.type === 'tool_result'),
    tools: Array.isArray(body.tools)
      ? body.tools.filter(isObject).flatMap((tool) => (typeof tool.name === 'string' ? [tool.name] : []))
      : [],
    systemText: textOf(body.system),
  };
}

export function matches(match: Match, facts: RequestFacts): boolean {
  if (match.request !== undefined && match.request !== facts.request) return false;
  if (match.turn !== undefined && match.turn !== facts.turn) return false;
  if (match.model !== undefined && match.model !== facts.model) return false;
  if (match.stream !== undefined && match.stream !== facts.stream) return false;
  if (match.lastUserContains !== undefined && !facts.lastUserText.includes(match.lastUserContains)) return false;
  if (match.lastUserMatches !== undefined && !new RegExp(match.lastUserMatches).test(facts.lastUserText)) return false;
  if (match.hasToolResults !== undefined && match.hasToolResults !== facts.hasToolResults) return false;
  if (match.toolsOffered !== undefined && !match.toolsOffered.every((name) => facts.tools.includes(name))) return false;
  if (match.systemContains !== undefined && !facts.systemText.includes(match.systemContains)) return false;
  return true;
}

/** One line a person can read in an "unmatched request" error. */
export function describeFacts(facts: RequestFacts): string {
  const last = facts.lastUserText.length > 80 ? `${facts.lastUserText.slice(0, 77)}...` : facts.lastUserText;
  const tools = facts.tools.length > 0 ? facts.tools.join(', ') : 'none';
  return (
    `request #${facts.request}, turn ${facts.turn}, model ${facts.model || '(none)'}, ` +
    `stream ${facts.stream}, tools ${tools}, tool results ${facts.hasToolResults}, last user text ${JSON.stringify(last)}`
  );
}
