// Token usage the way the real API reports it, estimated at ~4 characters a token, with
// prompt caching simulated: the prefix up to the last `cache_control` breakpoint (tools,
// then system) is written to the cache the first time it is seen and read after that.
import { createHash } from 'node:crypto';
import type { ReplyBlock, ScenarioUsage } from './scenario';

export interface ApiUsage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
  output_tokens: number;
  service_tier: 'standard';
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

export const estimateTokens = (text: string): number => (text.length === 0 ? 0 : Math.ceil(text.length / 4));

function cacheablePrefix(body: Json): { parts: unknown[]; ttl: '5m' | '1h' } | null {
  const tools: unknown[] = Array.isArray(body.tools) ? (body.tools as unknown[]) : [];
  const system: unknown[] =
    typeof body.system === 'string'
      ? [{ type: 'text', text: body.system }]
      : Array.isArray(body.system)
        ? (body.system as unknown[])
        : [];
  const parts: unknown[] = [...tools, ...system];
  let last = -1;
  parts.forEach((part, index) => {
    if (isObject(part) && isObject(part.cache_control)) last = index;
  });
  if (last < 0) return null;
  const breakpoint = parts[last] as Json;
  const ttl = (breakpoint.cache_control as Json).ttl === '1h' ? '1h' : '5m';
  return { parts: parts.slice(0, last + 1), ttl };
}

export class PromptCacheSimulator {
  private readonly written = new Set<string>();

  usageFor(body: Json, content: ReplyBlock[], override: ScenarioUsage | undefined): ApiUsage {
    const whole = estimateTokens(JSON.stringify([body.tools ?? [], body.system ?? '', body.messages ?? []]));
    const prefix = cacheablePrefix(body);
    let creation = 0;
    let read = 0;
    let ttl: '5m' | '1h' = '5m';
    if (prefix) {
      const tokens = estimateTokens(JSON.stringify(prefix.parts));
      const key = createHash('sha256')
        .update(String(body.model))
        .update(JSON.stringify(prefix.parts))
        .digest('hex');
      ttl = prefix.ttl;
      if (this.written.has(key)) {
        read = tokens;
      } else {
        this.written.add(key);
        creation = tokens;
      }
    }
    const output = estimateTokens(
      content
        .map((block) => {
          switch (block.type) {
            case 'text':
              return block.text;
            case 'thinking':
              return block.thinking;
            case 'tool_use':
              return JSON.stringify(block.input) + block.name;
          }
        })
        .join(''),
    );
    const cacheCreation = override?.cache_creation_input_tokens ?? creation;
    return {
      input_tokens: override?.input_tokens ?? Math.max(1, whole - creation - read),
      cache_creation_input_tokens: cacheCreation,
      cache_read_input_tokens: override?.cache_read_input_tokens ?? read,
      cache_creation: {
        ephemeral_5m_input_tokens: ttl === '5m' ? cacheCreation : 0,
        ephemeral_1h_input_tokens: ttl === '1h' ? cacheCreation : 0,
      },
      output_tokens: override?.output_tokens ?? Math.max(1, output),
      service_tier: 'standard',
    };
  }
}
