// A scenario scripts the stand-in: an ordered list of rules, each matching a request and
// answering it with a reply (text, tool_use, thinking) or a fault. The first rule that
// matches and still has uses left answers; nothing matching is an error, never a guess.
import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

export const API_ERROR_TYPES = [
  'invalid_request_error',
  'authentication_error',
  'billing_error',
  'permission_error',
  'not_found_error',
  'request_too_large',
  'rate_limit_error',
  'timeout_error',
  'api_error',
  'overloaded_error',
] as const;
export type ApiErrorType = (typeof API_ERROR_TYPES)[number];

/** Every stop_reason of the SDK's `StopReason` (test/unit/conformance.test.ts keeps this in step). */
export const STOP_REASONS = ['end_turn', 'max_tokens', 'stop_sequence', 'tool_use', 'pause_turn', 'refusal', 'model_context_window_exceeded'] as const;

const textBlock = z.object({ type: z.literal('text'), text: z.string() }).strict();
const toolUseBlock = z
  .object({
    type: z.literal('tool_use'),
    name: z.string().min(1),
    input: z.record(z.string(), z.unknown()),
    id: z.string().min(1).optional(),
    /** max_tokens strikes inside this block: only this many characters of its input JSON are sent. */
    cutAfterChars: z.number().int().min(0).optional(),
  })
  .strict();
const thinkingBlock = z
  .object({ type: z.literal('thinking'), thinking: z.string(), signature: z.string().min(1).optional() })
  .strict();
/** A server tool the API runs itself (web search, web fetch): the model's call… */
const serverToolUseBlock = z
  .object({ type: z.literal('server_tool_use'), name: z.enum(['web_search', 'web_fetch']), input: z.record(z.string(), z.unknown()), id: z.string().min(1).optional() })
  .strict();
/** …and its result; `tool_use_id` defaults to the server_tool_use just before it. */
const webSearchResultBlock = z
  .object({ type: z.literal('web_search_tool_result'), tool_use_id: z.string().min(1).optional(), content: z.array(z.record(z.string(), z.unknown())) })
  .strict();
export const replyBlockSchema = z.discriminatedUnion('type', [textBlock, toolUseBlock, thinkingBlock, serverToolUseBlock, webSearchResultBlock]);
export type ReplyBlock = z.infer<typeof replyBlockSchema>;

const usageSchema = z
  .object({
    input_tokens: z.number().int().min(0),
    output_tokens: z.number().int().min(0),
    cache_creation_input_tokens: z.number().int().min(0),
    cache_read_input_tokens: z.number().int().min(0),
  })
  .partial()
  .strict();
export type ScenarioUsage = z.infer<typeof usageSchema>;

export const replySchema = z
  .object({
    /** Empty only for a refusal or a context-window stop, as the real API may send them. */
    content: z.array(replyBlockSchema),
    /** Defaults to `tool_use` when a tool_use block is present, else `end_turn`. */
    stopReason: z.enum(STOP_REASONS).optional(),
    stopSequence: z.string().nullable().optional(),
    /** stop_details of a refusal: the policy category and the explanation. */
    stopDetails: z
      .object({ category: z.enum(['cyber', 'bio', 'frontier_llm', 'reasoning_extraction', 'general_harms']).nullable(), explanation: z.string().nullable() })
      .strict()
      .optional(),
    /** Overrides the estimated counts field by field. */
    usage: usageSchema.optional(),
    /** Pause before each content delta, to make a stream slow enough to watch or cancel. */
    delayMs: z.number().int().min(0).default(0),
    /** Characters per text/thinking/tool-input delta. */
    chunkSize: z.number().int().positive().default(16),
  })
  .strict()
  .refine((reply) => reply.content.length > 0 || reply.stopReason === 'refusal' || reply.stopReason === 'model_context_window_exceeded', {
    message: 'a reply needs content, unless it is a refusal or a context-window stop',
    path: ['content'],
  });
export type Reply = z.infer<typeof replySchema>;

// `afterEvents` counts SSE events (pings excluded) written before the fault strikes.
export const faultSchema = z.discriminatedUnion('kind', [
  z
    .object({
      kind: z.literal('status'),
      status: z.number().int().min(400).max(599),
      /** Defaults to the type the real API pairs with the status. */
      errorType: z.enum(API_ERROR_TYPES).optional(),
      message: z.string().optional(),
      /** `retry-after` header: seconds, or an HTTP date. */
      retryAfter: z.union([z.number().min(0), z.string()]).optional(),
      retryAfterMs: z.number().min(0).optional(),
      /** `x-should-retry` header. */
      shouldRetry: z.boolean().optional(),
    })
    .strict(),
  z
    .object({
      kind: z.literal('stream_error'),
      afterEvents: z.number().int().min(0).default(2),
      errorType: z.enum(API_ERROR_TYPES).default('overloaded_error'),
      message: z.string().optional(),
    })
    .strict(),
  z
    .object({
      kind: z.literal('hang'),
      /** Absent: hang before the response headers. */
      afterEvents: z.number().int().min(0).optional(),
    })
    .strict(),
  z.object({ kind: z.literal('drop'), afterEvents: z.number().int().min(0).default(3) }).strict(),
  z.object({ kind: z.literal('malformed_json'), afterEvents: z.number().int().min(0).default(2) }).strict(),
]);
export type Fault = z.infer<typeof faultSchema>;

const regexSource = z.string().refine(
  (source) => {
    try {
      new RegExp(source);
      return true;
    } catch {
      return false;
    }
  },
  { message: 'not a valid regular expression' },
);

export const matchSchema = z
  .object({
    /** The nth request the server received (1-based), whatever its content. */
    request: z.number().int().positive().optional(),
    /** Assistant messages in the request + 1: retries of one call share a turn. */
    turn: z.number().int().positive().optional(),
    lastUserContains: z.string().optional(),
    lastUserMatches: regexSource.optional(),
    /** Whether the last user message carries tool_result blocks. */
    hasToolResults: z.boolean().optional(),
    /** Every named tool must be offered. */
    toolsOffered: z.array(z.string()).optional(),
    systemContains: z.string().optional(),
    model: z.string().optional(),
    stream: z.boolean().optional(),
  })
  .strict();
export type Match = z.infer<typeof matchSchema>;

export const ruleSchema = z
  .object({
    name: z.string().optional(),
    match: matchSchema.default({}),
    /** How many requests this rule may answer; unlimited when absent. */
    times: z.number().int().positive().optional(),
    reply: replySchema.optional(),
    fault: faultSchema.optional(),
  })
  .strict()
  .refine((rule) => rule.reply !== undefined || rule.fault !== undefined, {
    message: 'a rule needs a reply, a fault, or both (a mid-stream fault interrupts the reply)',
  });
export type Rule = z.infer<typeof ruleSchema>;

export const scenarioSchema = z
  .object({
    name: z.string().default('scenario'),
    /** Keys the server accepts; any non-empty key when absent. */
    apiKeys: z.array(z.string().min(1)).optional(),
    /** Models the server knows besides the API's own (machines/model-limits.ts); any other gets the API's 404. */
    models: z.array(z.string().min(1)).optional(),
    rules: z.array(ruleSchema),
  })
  .strict();
export type Scenario = z.infer<typeof scenarioSchema>;
export type ScenarioInput = z.input<typeof scenarioSchema>;

export function parseScenario(value: unknown, source = 'scenario'): Scenario {
  const result = scenarioSchema.safeParse(value);
  if (!result.success) {
    throw new Error(`${source} is not a valid stand-in scenario:\n${z.prettifyError(result.error)}`);
  }
  return result.data;
}

/** Reads a scenario from a `.json`, `.yaml` or `.yml` file (YAML is a superset of JSON). */
export async function loadScenario(file: string): Promise<Scenario> {
  const text = await readFile(file, 'utf8');
  let value: unknown;
  try {
    value = parseYaml(text);
  } catch (error) {
    throw new Error(`${file} is neither JSON nor YAML: ${(error as Error).message}`, { cause: error });
  }
  return parseScenario(value, file);
}
