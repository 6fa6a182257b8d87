// Prompt caching: a breakpoint on the last tool definition and on the last system block,
// so a long session pays full price for its tools and instructions once and reads them
// from the cache afterwards. A caller who placed breakpoints keeps them as they are.
import type Anthropic from '@anthropic-ai/sdk';

const EPHEMERAL: Anthropic.CacheControlEphemeral = { type: 'ephemeral' };

type Cacheable = { cache_control?: Anthropic.CacheControlEphemeral | null };

function hasBreakpoint(items: readonly unknown[]): boolean {
  return items.some((item) => typeof item === 'object' && item !== null && (item as Cacheable).cache_control != null);
}

function markLast<T>(items: readonly T[]): T[] {
  if (items.length === 0 || hasBreakpoint(items)) return [...items];
  return items.map((item, index) => (index === items.length - 1 ? { ...item, cache_control: EPHEMERAL } : item));
}

export function withPromptCaching(request: {
  system?: string | Anthropic.TextBlockParam[] | undefined;
  tools?: Anthropic.ToolUnion[] | undefined;
}): { system?: Anthropic.TextBlockParam[]; tools?: Anthropic.ToolUnion[] } {
  const out: { system?: Anthropic.TextBlockParam[]; tools?: Anthropic.ToolUnion[] } = {};
  if (request.system !== undefined) {
    const blocks: Anthropic.TextBlockParam[] =
      typeof request.system === 'string' ? [{ type: 'text', text: request.system }] : request.system;
    if (blocks.length > 0 && blocks.some((block) => block.text.length > 0)) out.system = markLast(blocks);
  }
  if (request.tools !== undefined && request.tools.length > 0) out.tools = markLast(request.tools);
  return out;
}
