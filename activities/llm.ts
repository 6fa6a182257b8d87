// The model activity: one streamed Messages API call through `@anthropic-ai/sdk`.
// Temporal owns retries (the SDK's are off) and timeouts (the SDK's request timeout is
// derived from start-to-close); an interrupt aborts the HTTP request through the
// activity's cancellation signal; text and thinking deltas reach the calling workflow's
// stream live. The API key is read here, from the worker's environment, and goes
// nowhere else: not into inputs, results, heartbeats, failures or logs.
import type Anthropic from '@anthropic-ai/sdk';
import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import { WorkflowStreamClient } from '@temporalio/workflow-streams/client';
import { z } from 'zod';
import { MessageAccumulator } from './llm-accumulate';
import { withPromptCaching } from './llm-cache';
import { anthropicClient, countingBytes } from './llm-client';
import { ConnectionProgress } from './llm-connection';
import { hasReader } from './live-readers';
import { liveText, type ModelStreamEvent } from '../shared/model-stream';
import { DeltaPublisher, FIRST_DELTA_MS } from './llm-deltas';
import { StreamPace } from './stream-pace';
// The workflow-stream topic model output travels on.
import { MODEL_TOPIC } from '../workflows/protocol/topics';
import {
  apiKeyMissingFailure,
  classifyModelError,
  invalidInputFailure,
  MODEL_FAILURE,
  NO_RESPONSE,
  overBudgetFailure,
  type SpentUsage,
  streamDroppedFailure,
  streamStalledFailure,
  sumSpent,
  withSpentUsage,
} from './llm-errors';
import { fitCall, type CallFit } from '../machines/call-ceiling';
import { defaultCompactAboveTokens } from '../machines/model-limits';
import { type Compaction, compactConversation, estimateTokens, type SummaryUsage, summaryRequest, transcriptSummaryRequest } from './conversation-compaction';
import { keptBytes, type ModelCallInput, modelCallInputSchema, type ModelCallResult, messagesOf, rememberCompacted, toolsOf, warmKeyHere } from './llm-input';
import { requestParts, streamedBody } from './request-bytes';
import { billedPrice, costAt, costOf, loadPriceTable, type ModelCost, type PriceTable, type UsageForCost } from './llm-pricing';

export { MODEL_ACTIVITY_OPTIONS } from './llm-options';
export { MODEL_FAILURE, type ModelFailureDetails, type ModelFailureType, type SpentUsage } from './llm-errors';
export { type ModelStreamEvent } from '../shared/model-stream';
export type { ModelCallHeartbeat, ModelConnectionState } from './llm-connection';
export type { LiveModelText } from '../shared/model-stream';
export type { ModelCallInput, ModelCallResult, ModelConversation } from './llm-input';
export type { Compaction } from './conversation-compaction';
export type { ModelCost } from './llm-pricing';

export interface ModelActivityConfig {
  /** USD per million tokens by model id; default: the built-in table + KEEL_MODEL_PRICES. */
  prices?: PriceTable;
  /** Where ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL are read; default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** A stream that sends nothing (not even a ping) for this long is abandoned and retried. */
  streamIdleTimeoutMs?: number;
  /** Upper bound on the SDK's wait for response headers; start-to-close lowers it further. */
  requestTimeoutMs?: number;
  heartbeatIntervalMs?: number;
  /** How often merged deltas are sent to the workflow stream while few calls stream. */
  publishIntervalMs?: number;
  /**
   * Stream signals a second all of this worker's calls may send between them; while many
   * stream, each sends less often (activities/stream-pace.ts), up to every `maxPublishIntervalMs`.
   */
  streamSignalsPerSecond?: number;
  maxPublishIntervalMs?: number;
}

const DEFAULTS = {
  streamIdleTimeoutMs: 90_000,
  requestTimeoutMs: 10 * 60_000,
  heartbeatIntervalMs: 500,
  publishIntervalMs: 150,
  streamSignalsPerSecond: 20,
  maxPublishIntervalMs: 2_000,
};

export interface ModelActivities {
  callModel(input: ModelCallInput): Promise<ModelCallResult>;
}

export function createModelActivities(config: ModelActivityConfig = {}): ModelActivities {
  const env = config.env ?? process.env;
  const prices = config.prices ?? loadPriceTable(env);
  const defined = { ...DEFAULTS, ...definedOnly(config) };
  // One budget for every call these activities run: a worker creates them once.
  const pace = new StreamPace({ signalsPerSecond: defined.streamSignalsPerSecond, minIntervalMs: defined.publishIntervalMs, maxIntervalMs: defined.maxPublishIntervalMs });
  const settings = { ...defined, env, prices, pace };
  return {
    async callModel(input: ModelCallInput): Promise<ModelCallResult> {
      return runModelCall(input, settings);
    },
  };
}

let defaults: ModelActivities | undefined;

/** `callModel` with the default configuration, read from the environment on first use. */
export async function callModel(input: ModelCallInput): Promise<ModelCallResult> {
  defaults ??= createModelActivities();
  return defaults.callModel(input);
}

type Settings = typeof DEFAULTS & { env: NodeJS.ProcessEnv; prices: PriceTable; pace: StreamPace };

async function runModelCall(rawInput: ModelCallInput, settings: Settings): Promise<ModelCallResult> {
  const ctx = Context.current();
  const { attempt } = ctx.info;
  const checked = modelCallInputSchema.safeParse(rawInput);
  if (!checked.success) throw invalidInputFailure(z.prettifyError(checked.error));
  const input = rawInput;
  const apiKey = settings.env.ANTHROPIC_API_KEY?.trim();
  if (!apiKey) throw apiKeyMissingFailure();

  const progress = new ConnectionProgress(attempt);
  // An earlier attempt lost with its worker was billed too: its last heartbeat says for what.
  let lost = attempt > 1 ? lostUsage(ctx.info.heartbeatDetails as unknown) : null;
  // Lost before it heartbeated (a call nobody reads heartbeats every 0.5 s): with
  // 'timeouts_only' Temporal retried only a timeout, so that attempt may have been billed
  // for this same request's input. Counted as that once this attempt knows it (message_start):
  // a budget must rather count a call too many than one too few.
  const lostUnseen = lost === null && attempt > 1 && input.serverRetries === 'timeouts_only';
  const accumulator = new MessageAccumulator();
  const spent = (): SpentUsage | null => spentUsage(accumulator, input.model, settings.prices);
  // The usage so far rides on every heartbeat: if this worker dies mid-stream, the
  // workflow reads it from the heartbeat timeout's last details and still counts it, and
  // so does the next attempt (`lost`).
  // And the text so far (activities/llm-deltas.ts LiveModelText): clients read it from the
  // server while the call streams, without a workflow task.
  const publishing = input.publish !== false && ctx.info.workflowExecution !== undefined;
  // Someone reads the workflow's stream (activities/live-readers.ts): only then do stream
  // events heartbeat, for the text; unread, a call heartbeats on its clock alone.
  const workflowId = ctx.info.workflowExecution?.workflowId;
  const read = (): boolean => publishing && workflowId !== undefined && hasReader(workflowId);
  const call = { callId: input.callId ?? null, attempt };
  let lastBeat = Date.now(); // paced heartbeats start a pace after the call does
  let beaten = false;
  let textBeaten = false;
  const heartbeat = () => {
    lastBeat = Date.now();
    beaten = true;
    // With the lost attempt's usage: if this attempt is lost too, the next one (or the workflow,
    // reading the last heartbeat of a timed-out call) still counts both.
    ctx.heartbeat({ ...progress.details(), usage: sumSpent(spent(), lost), ...(publishing ? { live: liveText(call, accumulator.streamedBlocks()) } : {}) });
  };
  // Heartbeats on a clock as well as on stream events: a cancel is delivered only in
  // answer to a heartbeat, and the wait for the first byte can be long. None before the
  // first text or the first tick: the SDK sends a call's first heartbeat at once and holds
  // the next for its throttle (50 ms), so one at the start would delay the first text's; and
  // each is a write on the server (~6 ms of its CPU, bench/delta-channel.ts).
  const ticker = setInterval(heartbeat, settings.heartbeatIntervalMs);

  const streamClient = publishing
    ? WorkflowStreamClient.fromWithinActivity({
        batchInterval: settings.publishIntervalMs,
        // A stream that cannot be reached must not hold the call hostage.
        maxRetryDuration: '5 seconds',
      })
    : undefined;
  // The first text goes at once only to a workflow someone reads (a watcher sees it start);
  // unread, it waits for the pace like the rest: a reader who comes later reads it live first.
  const paced = () => settings.pace.intervalMs();
  const deltas = streamClient ? new DeltaPublisher(streamClient.topic<ModelStreamEvent>(MODEL_TOPIC), call, paced, () => (read() ? FIRST_DELTA_MS : paced())) : undefined;
  // Streaming, for the worker's budget of stream signals, until the call ends (the finally below).
  const leavePace = deltas ? settings.pace.join() : () => undefined;
  if (attempt > 1) deltas?.retry();

  const idle = new AbortController();
  let idleTimer: NodeJS.Timeout | undefined;
  const armIdleTimer = () => {
    clearTimeout(idleTimer);
    idleTimer = setTimeout(() => idle.abort(), settings.streamIdleTimeoutMs);
  };
  const signal = AbortSignal.any([ctx.cancellationSignal, idle.signal]);

  let requestId: string | null = null;
  // A compaction's summary call, billed before the turn's request: an interrupt counts it too.
  let summarySpent: SpentUsage | null = null;
  try {
    // Unset means the real API; the stand-in or a proxy is chosen by the worker's env.
    const client = anthropicClient(apiKey, settings.env.ANTHROPIC_BASE_URL?.trim() || null);
    const timeout = sdkTimeoutMs(ctx.info.startToCloseTimeoutMs, settings.requestTimeoutMs);
    const counted = <T>(request: () => T): T =>
      countingBytes((bytes) => {
        progress.received(bytes);
        armIdleTimer();
      }, request);
    // The session's conversation kept warm on this worker between its calls (activities/warm-conversations.ts).
    const warm = warmKeyHere();
    const conversation = await messagesOf(input.conversation, settings.env, warm);
    if (conversation.messages.length === 0) throw invalidInputFailure('conversation: the stored conversation is empty');
    let compaction: Compaction | undefined;
    const ref = input.conversation.kind === 'ref' ? input.conversation : null;
    const compactNow = ref?.compactNow === true;
    // Proactive: the last response said how many input tokens the conversation had; what
    // was appended since is estimated. Without a measure, the whole is estimated.
    const measured =
      // (The appended messages as sent: a stored tool result counts whole, not as its preview.)
      ref?.lastInputTokens !== undefined ? ref.lastInputTokens + estimateTokens(ref.append.length > 0 ? conversation.messages.slice(-ref.append.length) : []) : estimateTokens(conversation.messages);
    const compactAbove = compactNow
      ? Math.max(1, Math.floor(estimateTokens(conversation.messages) / 2))
      : ref !== null
        ? (ref.compactAboveTokens ?? defaultCompactAboveTokens(input.model))
        : undefined;
    const tools = await toolsOf(input, settings.env);
    if (compactAbove !== undefined && conversation.store !== undefined) {
      const before = conversation.messages;
      const compacted = await compactConversation(conversation.store, before, compactAbove, async (cut) => {
        // The turn's own request continued (its cached prefix read back), unless the
        // conversation no longer fits the window at all; a continuation that answered
        // without text (a tool call) is asked again the old way.
        const ask = async (request: Anthropic.MessageCreateParamsNonStreaming) => {
          const answer = await counted(() => client.messages.create(request, { signal, timeout, ...requestHeaders(input) }));
          return { text: answer.content.map((b) => (b.type === 'text' ? b.text : '')).join('').trim(), answer };
        };
        const first = compactNow ? null : await ask(summaryRequest(requestBody({ ...input, tools }, before), cut));
        const second = first === null || first.text === '' ? await ask(transcriptSummaryRequest(input.model, before, cut)) : null;
        const calls = [first?.answer, second?.answer].filter((a) => a !== undefined);
        const usage = calls.reduce<SummaryUsage>(
          (sum, a) => ({
            input_tokens: sum.input_tokens + a.usage.input_tokens,
            output_tokens: sum.output_tokens + a.usage.output_tokens,
            cache_creation_input_tokens: (sum.cache_creation_input_tokens ?? 0) + (a.usage.cache_creation_input_tokens ?? 0),
            cache_read_input_tokens: (sum.cache_read_input_tokens ?? 0) + (a.usage.cache_read_input_tokens ?? 0),
          }),
          { input_tokens: 0, output_tokens: 0 },
        );
        // A summary call is billed like any other: its price goes into the turn's spending.
        const costs = calls.map((a) => billedCost(input.model, a.model, a.usage, settings.prices)?.total ?? null);
        return { text: (second ?? first)!.text, usage, costUsd: costs.some((c) => c === null) ? null : costs.reduce<number>((n, c) => n + c!, 0) };
      }, conversation.keys ?? null, compactNow ? undefined : measured);
      if (compacted) {
        conversation.messages = compacted.messages;
        conversation.head = compacted.head;
        rememberCompacted(warm, conversation.store, compacted.head, compacted.messages);
        compaction = compacted.compaction;
        summarySpent = { inputTokens: compaction.usage.input_tokens, outputTokens: compaction.usage.output_tokens, costUsd: compaction.costUsd, estimated: false };
        heartbeat();
      } else if (compactNow) {
        throw ApplicationFailure.create({
          type: MODEL_FAILURE.contextWindow,
          message: 'The conversation exceeds the context window and has no earlier turns to compact.',
          nonRetryable: true,
          details: [{ ...NO_RESPONSE, failureClass: 'fatal', usage: null }],
        });
      }
    }
    progress.connecting();
    const body = requestBody({ ...input, tools }, conversation.messages);
    if (input.budget !== undefined) {
      // The budget is a ceiling before the call: shrunk to fit its worst case, or not sent.
      const inputTokens = compaction === undefined && ref?.lastInputTokens !== undefined ? measured : estimateRequestTokens(body);
      const fit = fitToBudget(body, input, inputTokens, settings.prices);
      if (!fit.fits) {
        const before = compaction !== undefined ? { inputTokens: compaction.usage.input_tokens, outputTokens: compaction.usage.output_tokens, costUsd: compaction.costUsd, estimated: false } : null;
        throw overBudgetFailure({ limit: fit.limit, left: fit.left, needed: fit.needed }, sumSpent(before, lost));
      }
    }
    // A long warm conversation is sent from the bytes kept for it (activities/request-bytes.ts).
    const kept = keptBytes(warm, conversation.messages);
    const sent = kept === undefined ? undefined : streamedBody(requestParts(body as unknown as Record<string, unknown>, conversation.messages, kept));
    const headers = { ...requestHeaders(input).headers, ...sent?.headers };
    const { data: stream, request_id, response } = await counted(() => client.messages.create(body, { signal, timeout, headers, ...(sent && { body: sent.body }) }).withResponse());
    requestId = request_id ?? response.headers.get('request-id');
    progress.connected(requestId);
    armIdleTimer();
    let started = false;
    let sawText = false;

    for await (const event of stream) {
      progress.event();
      accumulator.apply(event);
      if (!started && event.type === 'message_start') {
        started = true;
        if (lostUnseen) lost = inputOnly(accumulator, input.model, settings.prices);
        // Input tokens are billed from here on: watchers (and an interrupt) can count them.
        deltas?.start(requestId, input.model, spentPrices(accumulator, input.model, settings.prices));
      }
      if (event.type === 'content_block_delta') {
        if (event.delta.type === 'text_delta') deltas?.delta(event.index, 'text', event.delta.text);
        else if (event.delta.type === 'thinking_delta') deltas?.delta(event.index, 'thinking', event.delta.thinking);
      }
      // For a reader: the first text at once (it sees the text start; a reader that came later,
      // at its first read), then at the deltas' pace, a heartbeat every ~150 ms, not one per
      // 50 ms throttle. Nobody reading: the clock's alone.
      sawText ||= event.type === 'content_block_delta';
      if (sawText && read() && (!textBeaten || Date.now() - lastBeat >= settings.publishIntervalMs)) {
        textBeaten = true;
        heartbeat();
      }
    }
    // The SDK ends the iteration quietly when the request is aborted, and a server may
    // close a stream early: either way the message is not whole.
    if (!accumulator.complete) {
      if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason;
      if (idle.signal.aborted) throw streamStalledFailure(settings.streamIdleTimeoutMs, requestId);
      throw streamDroppedFailure('the stream closed before message_stop', requestId);
    }

    const { message, cut } = accumulator.result();
    progress.completed();
    // The server's copy says what this attempt spent, should its result be lost: needed only
    // where an earlier heartbeat put a smaller figure there (a call that sent none has
    // nothing on the server to correct, and its result carries its usage).
    if (beaten) heartbeat();
    const streamTail = deltas?.stop(message.stop_reason);
    return {
      message,
      stopReason: message.stop_reason,
      usage: message.usage,
      requestId,
      model: message.model,
      cost: billedCost(input.model, message.model, message.usage, settings.prices),
      attempt,
      ...(conversation.head !== undefined ? { conversationHead: conversation.head } : {}),
      ...(compaction !== undefined ? { compaction } : {}),
      ...(cut !== null ? { cutToolUse: cut } : {}),
      ...(lost !== null ? { lostAttemptUsage: lost } : {}),
      ...(streamTail !== undefined ? { streamTail } : {}),
    };
  } catch (error) {
    // The error's class only: heartbeat details are readable by anyone who can describe the workflow.
    progress.failed(ctx.cancellationSignal.aborted ? 'cancelled' : error instanceof Error ? error.name : 'error');
    // Never sent: it carries what was spent before it (a compaction), nothing else to count.
    if (error instanceof ApplicationFailure && error.type === MODEL_FAILURE.overBudget) throw error;
    if (ctx.cancellationSignal.aborted) {
      deltas?.discard();
      const reason: unknown = ctx.cancellationSignal.reason;
      // The request was aborted the moment the cancel arrived (the signal closes the
      // connection), so what the stream had brought until then is what was generated and
      // billed: it travels with the cancel, and the turn counts what its own estimate at the
      // interrupt had not seen (workflows/turn-results.ts settledBeyond).
      throw new CancelledFailure(reason instanceof Error ? reason.message : 'model call cancelled', [sumSpent(sumSpent(spent(), lost), summarySpent)]);
    }
    const failure = withSpentUsage(
      idle.signal.aborted && !(error instanceof ApplicationFailure)
        ? streamStalledFailure(settings.streamIdleTimeoutMs, requestId)
        : classifyModelError(error, requestId),
      sumSpent(spent(), lost),
      input.serverRetries === 'timeouts_only',
    );
    ctx.log.warn('model call failed', {
      failureType: failure.type,
      nonRetryable: failure.nonRetryable,
      requestId,
      attempt,
      model: input.model,
    });
    throw failure;
  } finally {
    leavePace();
    clearInterval(ticker);
    clearTimeout(idleTimer);
    // A failed call sends what it held (a completed one returned it as its tail; a cancelled one discarded its deltas).
    deltas?.flush();
    if (streamClient) {
      // Delivers what was sent before the activity completes, so the workflow's stream has
      // it ahead of the result (and of the tail the result carries).
      const dispose = streamClient[Symbol.asyncDispose];
      try {
        await dispose.call(streamClient);
      } catch (error) {
        ctx.log.warn('could not deliver model deltas to the workflow stream', { error: String(error) });
      }
    }
  }
}

/** Input tokens of a request with no measure of its conversation: its JSON at about 4 characters a token. */
function estimateRequestTokens(body: Anthropic.MessageCreateParamsStreaming): number {
  return Math.ceil(JSON.stringify([body.system ?? '', body.tools ?? [], body.messages]).length / 4);
}

/**
 * Lowers `body.max_tokens` (and a manual thinking budget with it) to what the call's budget
 * leaves after its worst case: every input token written to the cache (or uncached, at the
 * base price, without caching) and every output token generated. Unpriced, the USD limit
 * cannot be fitted (the run was refused at start unless it came from elsewhere).
 */
function fitToBudget(body: Anthropic.MessageCreateParamsStreaming, input: ModelCallInput, inputTokens: number, prices: PriceTable): CallFit {
  const budget = input.budget!;
  const price = billedPrice(input.model, input.model, prices);
  const writeRate = price === null ? 0 : input.promptCaching === false ? price.input : input.promptCacheTtl === '1h' ? (price.cacheWrite1h ?? price.input * 2) : (price.cacheWrite5m ?? price.input * 1.25);
  const manual = body.thinking?.type === 'enabled' ? body.thinking : null;
  const fit = fitCall(price === null ? { ...budget, costUsd: null } : budget, {
    inputTokens,
    inputUsd: (Math.max(writeRate, price?.input ?? 0) * inputTokens) / 1_000_000,
    outputUsdPerToken: (price?.output ?? 0) / 1_000_000,
    maxTokens: body.max_tokens,
    // Manual thinking needs max_tokens above a budget of at least 1 024.
    minMaxTokens: manual !== null ? 1_025 : 1,
  });
  if (fit.fits) {
    body.max_tokens = fit.maxTokens;
    if (manual !== null && manual.budget_tokens >= fit.maxTokens) body.thinking = { ...manual, budget_tokens: fit.maxTokens - 1 };
  }
  return fit;
}

function requestBody(input: ModelCallInput, messages: Anthropic.MessageParam[]): Anthropic.MessageCreateParamsStreaming {
  // Breakpoints by design (activities/llm-cache.ts); without caching the request is sent as it is.
  const cached =
    input.promptCaching === false
      ? { system: input.system, tools: input.tools, messages }
      : withPromptCaching(
          { system: input.system, tools: input.tools, messages },
          { ...(input.promptCacheTtl !== undefined ? { ttl: input.promptCacheTtl } : {}), ...(input.cacheConversation === false ? { conversation: false } : {}) },
        );
  return {
    model: input.model,
    max_tokens: input.maxTokens,
    messages: cached.messages,
    stream: true,
    ...(cached.system !== undefined ? { system: cached.system } : {}),
    ...(cached.tools !== undefined ? { tools: cached.tools } : {}),
    ...(input.toolChoice !== undefined ? { tool_choice: input.toolChoice } : {}),
    ...(input.thinking !== undefined ? { thinking: input.thinking } : {}),
    ...(input.temperature !== undefined ? { temperature: input.temperature } : {}),
    ...(input.stopSequences !== undefined ? { stop_sequences: input.stopSequences } : {}),
  };
}

/** Manual thinking between tool calls needs the interleaved-thinking beta (adaptive thinking interleaves by itself). */
export const INTERLEAVED_THINKING_BETA = 'interleaved-thinking-2025-05-14';

function requestHeaders(input: ModelCallInput): { headers?: Record<string, string> } {
  return input.interleavedThinking === true && input.thinking?.type === 'enabled' ? { headers: { 'anthropic-beta': INTERLEAVED_THINKING_BETA } } : {};
}

/** What a response costs: billed under the id it answered with, priced as the model asked for when that id is not in the table (machines/models.ts). */
function billedCost(requested: string, billed: string, usage: UsageForCost, prices: PriceTable): ModelCost | null {
  const price = billedPrice(requested, billed, prices);
  return price === null ? null : costAt(price, usage);
}

/** The `usage` of a previous attempt's last heartbeat, marked estimated; null when absent or not a usage. */
function lostUsage(details: unknown): SpentUsage | null {
  const usage = (details as { usage?: unknown } | null | undefined)?.usage as Partial<SpentUsage> | null | undefined;
  if (typeof usage?.inputTokens !== 'number' || typeof usage.outputTokens !== 'number') return null;
  return { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens, costUsd: typeof usage.costUsd === 'number' ? usage.costUsd : null, estimated: true };
}

/** What this attempt's request costs in input alone, estimated: the guess for a lost attempt of the same request that left no heartbeat. */
function inputOnly(accumulator: MessageAccumulator, model: string, prices: PriceTable): SpentUsage | null {
  const spent = accumulator.spent();
  return spent === null ? null : usageOf({ ...spent.usage, output_tokens: 0 }, true, model, prices);
}

function spentUsage(accumulator: MessageAccumulator, model: string, prices: PriceTable): SpentUsage | null {
  const spent = accumulator.spent();
  return spent === null ? null : usageOf(spent.usage, spent.estimated, model, prices);
}

function usageOf(u: UsageForCost, estimated: boolean, model: string, prices: PriceTable): SpentUsage {
  return {
    inputTokens: u.input_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0),
    outputTokens: u.output_tokens,
    costUsd: costOf(model, u, prices)?.total ?? null,
    estimated,
  };
}

/** Input already billed and the price of an output token, for the stream's `start` event. */
function spentPrices(accumulator: MessageAccumulator, model: string, prices: PriceTable): { inputTokens: number; inputCostUsd: number | null; outputUsdPerToken: number | null } {
  const spent = accumulator.spent();
  const u: UsageForCost = spent?.usage ?? { input_tokens: 0, output_tokens: 0 };
  const inputOnly = { ...u, output_tokens: 0 };
  const inputCost = costOf(model, inputOnly, prices);
  const oneOutput = costOf(model, { input_tokens: 0, output_tokens: 1 }, prices);
  return {
    inputTokens: u.input_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0),
    inputCostUsd: inputCost?.total ?? null,
    outputUsdPerToken: oneOutput?.total ?? null,
  };
}

/** Below start-to-close by 10% (at least a second), so the SDK's clear timeout wins. */
export function sdkTimeoutMs(startToCloseMs: number | undefined, ceilingMs: number): number {
  if (!startToCloseMs || !Number.isFinite(startToCloseMs)) return ceilingMs;
  const margin = Math.max(1_000, startToCloseMs * 0.1);
  return Math.max(500, Math.min(ceilingMs, startToCloseMs - margin));
}

function definedOnly(config: ModelActivityConfig): Partial<typeof DEFAULTS> {
  return Object.fromEntries<number>(
    Object.entries({
      streamIdleTimeoutMs: config.streamIdleTimeoutMs,
      requestTimeoutMs: config.requestTimeoutMs,
      heartbeatIntervalMs: config.heartbeatIntervalMs,
      publishIntervalMs: config.publishIntervalMs,
      streamSignalsPerSecond: config.streamSignalsPerSecond,
      maxPublishIntervalMs: config.maxPublishIntervalMs,
    }).filter((entry): entry is [string, number] => entry[1] !== undefined),
  );
}
