// Token usage the way the real API reports it, estimated at ~4 characters a token, with
// prompt caching simulated as the API does it (platform.claude.com, "Prompt caching"):
//
// - The prompt is one sequence of blocks in the API's order: tools, then system, then
//   each message's content blocks. A cache entry is the hash of the exact bytes of the
//   prefix up to a block (the `cache_control` markers themselves are not part of it).
// - Breakpoints are the blocks that carry `cache_control`, plus, when the request has a
//   top-level `cache_control` (automatic caching), the last cacheable block.
// - Reads: from each breakpoint the API looks back over at most 20 block boundaries for
//   a live entry; the longest hit is read (`cache_read_input_tokens`).
// - Writes: every breakpoint after the read whose prefix reaches the model's minimum
//   cacheable length is written; the tokens between the read and the last written
//   breakpoint are `cache_creation_input_tokens`, split by TTL in `cache_creation`.
//   A prefix under the minimum is not cached at all, and no error says so.
// - An entry lives 5 minutes (or 1 hour) from its last write or read.
// - Everything after the last breakpoint (or the read) is plain `input_tokens`.
import { createHash } from 'node:crypto';
import { minCacheableTokens } from '../machines/model-limits';
import type { ReplyBlock, ScenarioUsage } from './scenario';

export interface ApiUsage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
  output_tokens: number;
  service_tier: 'standard';
  /** Server tools the API ran for this answer (billed per use: web search). */
  server_tool_use?: { web_search_requests: number; web_fetch_requests: number };
}

type Json = Record<string, unknown>;
type Ttl = '5m' | '1h';
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

export const estimateTokens = (text: string): number => (text.length === 0 ? 0 : Math.ceil(text.length / 4));

/** How far back from a breakpoint the API looks for an earlier cache entry (in blocks). */
export const CACHE_LOOKBACK_BLOCKS = 20;
const TTL_MS: Record<Ttl, number> = { '5m': 5 * 60_000, '1h': 60 * 60_000 };

export interface PromptBlock {
  /** Where the block is, as the API names it in errors (`tools.0`, `system.1`, `messages.2.content.0`). */
  path: string;
  /** The bytes this block adds to the prefix (its JSON without `cache_control`; a message's first block opens with its role). */
  bytes: string;
  tokens: number;
  /** The TTL of a breakpoint on this block, or null. */
  breakpoint: Ttl | null;
  /** Thinking blocks cannot carry a breakpoint (automatic caching skips them). */
  cacheable: boolean;
}

const ttlOf = (control: unknown): Ttl | null => (isObject(control) ? (control.ttl === '1h' ? '1h' : '5m') : null);

function block(path: string, value: unknown, prefix = ''): PromptBlock {
  const control = isObject(value) ? value.cache_control : undefined;
  const bare = isObject(value) ? Object.fromEntries(Object.entries(value).filter(([key]) => key !== 'cache_control')) : value;
  const bytes = prefix + JSON.stringify(bare);
  const type = isObject(value) ? value.type : 'text';
  return { path, bytes, tokens: estimateTokens(bytes), breakpoint: ttlOf(control), cacheable: type !== 'thinking' && type !== 'redacted_thinking' };
}

/** The request as the cache sees it: its blocks in order, tools → system → messages. */
export function promptBlocks(body: Json): PromptBlock[] {
  const out: PromptBlock[] = [];
  const tools: unknown[] = Array.isArray(body.tools) ? (body.tools as unknown[]) : [];
  tools.forEach((tool, i) => out.push(block(`tools.${i}`, tool)));
  if (typeof body.system === 'string') {
    if (body.system.length > 0) out.push(block('system', { type: 'text', text: body.system }));
  } else if (Array.isArray(body.system)) {
    (body.system as unknown[]).forEach((part, i) => out.push(block(`system.${i}`, part)));
  }
  const messages: unknown[] = Array.isArray(body.messages) ? (body.messages as unknown[]) : [];
  messages.forEach((message, m) => {
    if (!isObject(message)) return;
    const role = `\n${String(message.role)}:`;
    const content: unknown[] = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : Array.isArray(message.content) ? (message.content as unknown[]) : [];
    content.forEach((part, i) => out.push(block(`messages.${m}.content.${i}`, part, i === 0 ? role : '')));
  });
  // Automatic caching: the top-level marker lands on the last block that can carry one.
  const auto = ttlOf(body.cache_control);
  if (auto !== null) {
    const last = out.findLastIndex((b) => b.cacheable);
    if (last >= 0 && out[last]!.breakpoint === null) out[last] = { ...out[last]!, breakpoint: auto };
  }
  return out;
}

/** Breakpoints in the request, the top-level one included: the API allows at most 4. */
export function breakpointCount(body: Json): number {
  const explicit = promptBlocks({ ...body, cache_control: undefined }).filter((b) => b.breakpoint !== null).length;
  return explicit + (isObject(body.cache_control) ? 1 : 0);
}

interface Entry {
  expiresAt: number;
  ttl: Ttl;
}

export interface CacheOutcome {
  /** Tokens of the whole prompt. */
  total: number;
  read: number;
  written5m: number;
  written1h: number;
}

export class PromptCacheSimulator {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Reads and writes the cache for one request, as the API would bill it. */
  apply(body: Json): CacheOutcome {
    const model = String(body.model);
    const blocks = promptBlocks(body);
    const hashes: string[] = [];
    const cumulative: number[] = [];
    let hash = createHash('sha256').update(model).digest('hex');
    let tokens = 0;
    for (const b of blocks) {
      hash = createHash('sha256').update(hash).update(b.bytes).digest('hex');
      tokens += b.tokens;
      hashes.push(hash);
      cumulative.push(tokens);
    }
    const total = Math.max(1, tokens);
    const breakpoints = blocks.flatMap((b, i) => (b.breakpoint !== null ? [{ index: i, ttl: b.breakpoint }] : []));
    if (breakpoints.length === 0) return { total, read: 0, written5m: 0, written1h: 0 };
    const now = this.now();
    const live = (key: string | undefined): Entry | null => {
      const entry = key === undefined ? undefined : this.entries.get(key);
      return entry !== undefined && entry.expiresAt > now ? entry : null;
    };

    // The longest live prefix within the lookback window of any breakpoint.
    let readAt = -1;
    for (const { index } of breakpoints) {
      for (let k = index; k >= Math.max(0, index - CACHE_LOOKBACK_BLOCKS + 1); k--) {
        if (k <= readAt) break;
        if (live(hashes[k]) !== null) {
          readAt = k;
          break;
        }
      }
    }
    if (readAt >= 0) {
      const entry = this.entries.get(hashes[readAt]!)!;
      entry.expiresAt = now + TTL_MS[entry.ttl];
    }
    const read = readAt >= 0 ? cumulative[readAt]! : 0;

    // Each breakpoint past the read that is long enough is written; the span up to it is
    // billed at its TTL's write price.
    const minimum = minCacheableTokens(model);
    let written5m = 0;
    let written1h = 0;
    let from = read;
    for (const { index, ttl } of breakpoints) {
      if (index <= readAt) continue;
      const upTo = cumulative[index]!;
      if (upTo < minimum) continue;
      const key = hashes[index]!;
      const existing = live(key);
      this.entries.set(key, { ttl: existing?.ttl === '1h' ? '1h' : ttl, expiresAt: now + TTL_MS[existing?.ttl === '1h' ? '1h' : ttl] });
      if (ttl === '1h') written1h += upTo - from;
      else written5m += upTo - from;
      from = upTo;
    }
    return { total, read, written5m, written1h };
  }

  usageFor(body: Json, content: ReplyBlock[], override: ScenarioUsage | undefined): ApiUsage {
    const cache = this.apply(body);
    const creation = cache.written5m + cache.written1h;
    const output = estimateTokens(
      content
        .map((b) => {
          switch (b.type) {
            case 'text':
              return b.text;
            case 'thinking':
              return b.thinking;
            case 'tool_use':
            case 'server_tool_use':
              return JSON.stringify(b.input) + b.name;
            case 'web_search_tool_result':
              // Search results are input to the model, not its output.
              return '';
          }
        })
        .join(''),
    );
    const cacheCreation = override?.cache_creation_input_tokens ?? creation;
    const scale = creation > 0 ? cacheCreation / creation : 1;
    const written1h = Math.round(cache.written1h * scale);
    return {
      input_tokens: override?.input_tokens ?? Math.max(1, cache.total - creation - cache.read),
      cache_creation_input_tokens: cacheCreation,
      cache_read_input_tokens: override?.cache_read_input_tokens ?? cache.read,
      cache_creation: {
        ephemeral_5m_input_tokens: creation > 0 ? cacheCreation - written1h : cacheCreation,
        ephemeral_1h_input_tokens: creation > 0 ? written1h : 0,
      },
      output_tokens: override?.output_tokens ?? Math.max(1, output),
      service_tier: 'standard',
      ...(serverUses(content, 'web_search') + serverUses(content, 'web_fetch') > 0
        ? { server_tool_use: { web_search_requests: serverUses(content, 'web_search'), web_fetch_requests: serverUses(content, 'web_fetch') } }
        : {}),
    };
  }
}

const serverUses = (content: ReplyBlock[], name: string): number => content.filter((b) => b.type === 'server_tool_use' && b.name === name).length;
