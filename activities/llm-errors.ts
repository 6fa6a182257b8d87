// Every way a model call fails, as an ApplicationFailure with a stable `type` and the
// right retryability: Temporal owns retries (the SDK's are off), so this table decides
// what is tried again. Bad requests and credentials are not; rate limits, overload,
// server errors and broken connections are, after the delay the API asks for.
import {
  APIConnectionError,
  APIConnectionTimeoutError,
  AnthropicError,
  APIError,
  APIUserAbortError,
} from '@anthropic-ai/sdk';
import { ApplicationFailure } from '@temporalio/activity';
import { failureClassOf, NO_RESPONSE, type ModelFailureClass } from '../machines/model-retry';

export { NO_RESPONSE };
import { ConversationStoreError } from './store/errors';

export const MODEL_FAILURE = {
  // Not retryable: the same request fails the same way.
  apiKeyMissing: 'ModelApiKeyMissing',
  invalidInput: 'ModelInvalidInput',
  badRequest: 'ModelBadRequest',
  authentication: 'ModelAuthenticationFailed',
  billing: 'ModelBillingError',
  permission: 'ModelPermissionDenied',
  notFound: 'ModelNotFound',
  requestTooLarge: 'ModelRequestTooLarge',
  unprocessable: 'ModelUnprocessable',
  rejected: 'ModelRequestRejected',
  client: 'ModelClientError',
  // Retried once, after compaction (machines/model-retry.ts): a smaller request may fit.
  contextWindow: 'ModelContextWindowExceeded',
  // Never the same request twice (machines/model-retry.ts).
  malformedResponse: 'ModelMalformedResponse',
  // Retryable: the service or the network may do better next time.
  requestTimeout: 'ModelRequestTimeout',
  conflict: 'ModelConflict',
  rateLimited: 'ModelRateLimited',
  overloaded: 'ModelOverloaded',
  server: 'ModelServerError',
  connection: 'ModelConnectionFailed',
  timeout: 'ModelTimeout',
  streamDropped: 'ModelStreamDropped',
  streamStalled: 'ModelStreamStalled',
  // Not made: its worst case could cross a budget (machines/call-ceiling.ts).
  overBudget: 'ModelCallOverBudget',
  unexpected: 'ModelUnexpectedError',
} as const;
export type ModelFailureType = (typeof MODEL_FAILURE)[keyof typeof MODEL_FAILURE];

/** What a failure carries besides its message (ApplicationFailure `details[0]`). */
export interface ModelFailureDetails {
  status: number | null;
  errorType: string | null;
  apiMessage: string | null;
  requestId: string | null;
  /** The failure arrived as an `event: error` inside a 200 stream. */
  inStream: boolean;
  retryAfterMs: number | null;
  /** Which row of the retry table (machines/model-retry.ts) applies. */
  failureClass: ModelFailureClass;
  /** Tokens this attempt was billed for before it failed (null: nothing was billed). */
  usage: SpentUsage | null;
  /** Whether retrying could help, when `nonRetryable` was forced for the caller's own retries. */
  retryable?: boolean;
  /** The call was not made: its worst case could cross this limit. */
  overBudget?: { limit: 'input_tokens' | 'output_tokens' | 'cost_usd'; left: number; needed: number };
}

/** What a failed or interrupted attempt spent, as far as the stream told. */
export interface SpentUsage {
  inputTokens: number;
  outputTokens: number;
  costUsd: number | null;
  /** Output counted from streamed text because the closing message_delta never came. */
  estimated: boolean;
}

const BY_STATUS: Record<number, { type: ModelFailureType; retryable: boolean }> = {
  400: { type: MODEL_FAILURE.badRequest, retryable: false },
  401: { type: MODEL_FAILURE.authentication, retryable: false },
  402: { type: MODEL_FAILURE.billing, retryable: false },
  403: { type: MODEL_FAILURE.permission, retryable: false },
  404: { type: MODEL_FAILURE.notFound, retryable: false },
  408: { type: MODEL_FAILURE.requestTimeout, retryable: true },
  409: { type: MODEL_FAILURE.conflict, retryable: true },
  413: { type: MODEL_FAILURE.requestTooLarge, retryable: false },
  422: { type: MODEL_FAILURE.unprocessable, retryable: false },
  429: { type: MODEL_FAILURE.rateLimited, retryable: true },
  529: { type: MODEL_FAILURE.overloaded, retryable: true },
};

const BY_ERROR_TYPE: Record<string, { type: ModelFailureType; retryable: boolean }> = {
  invalid_request_error: BY_STATUS[400]!,
  authentication_error: BY_STATUS[401]!,
  billing_error: BY_STATUS[402]!,
  permission_error: BY_STATUS[403]!,
  not_found_error: BY_STATUS[404]!,
  request_too_large: BY_STATUS[413]!,
  rate_limit_error: BY_STATUS[429]!,
  overloaded_error: BY_STATUS[529]!,
  api_error: { type: MODEL_FAILURE.server, retryable: true },
  timeout_error: { type: MODEL_FAILURE.requestTimeout, retryable: true },
};

function byStatus(status: number): { type: ModelFailureType; retryable: boolean } {
  return BY_STATUS[status] ?? (status >= 500 ? { type: MODEL_FAILURE.server, retryable: true } : { type: MODEL_FAILURE.rejected, retryable: false });
}

/** `retry-after-ms` first (milliseconds), then `retry-after` (seconds or an HTTP date). */
export function retryAfterMs(headers: Headers | undefined | null, now = Date.now()): number | null {
  if (!headers) return null;
  const ms = Number.parseFloat(headers.get('retry-after-ms') ?? '');
  if (Number.isFinite(ms) && ms > 0) return ms;
  const header = headers.get('retry-after');
  if (!header) return null;
  const seconds = Number.parseFloat(header);
  if (Number.isFinite(seconds)) return seconds > 0 ? seconds * 1000 : null;
  const date = Date.parse(header);
  return Number.isFinite(date) && date > now ? date - now : null;
}

const AUTH_HINT: Partial<Record<ModelFailureType, string>> = {
  [MODEL_FAILURE.authentication]: "Check ANTHROPIC_API_KEY in the worker's environment.",
  [MODEL_FAILURE.permission]: 'The API key is not allowed to use this model or resource.',
  [MODEL_FAILURE.billing]: 'Check the billing status of the Anthropic account.',
};

/** The fields of the SDK's APIError this reads (its generic parameters default to any). */
interface ApiErrorFields {
  status: number | undefined;
  headers: Headers | undefined;
  error: unknown;
  requestID: string | null | undefined;
  type: string | null;
  apiMessage: string | null;
}

function fromApiError(error: ApiErrorFields): ApplicationFailure {
  const inStream = error.status === undefined;
  const headers = error.headers ?? null;
  const bodyRequestId = (error.error as { request_id?: unknown } | undefined)?.request_id;
  const requestId = error.requestID ?? (typeof bodyRequestId === 'string' ? bodyRequestId : null);
  const errorType = error.type ?? null;
  const mapped =
    error.status === undefined
      ? (BY_ERROR_TYPE[errorType ?? ''] ?? { type: MODEL_FAILURE.server, retryable: true })
      : byStatus(error.status);
  // The server may say outright whether to try again; it knows better than the status.
  const shouldRetry = headers?.get('x-should-retry');
  const retryable = shouldRetry === 'false' ? false : shouldRetry === 'true' ? true : mapped.retryable;
  const delay = retryable ? retryAfterMs(headers) : null;
  const apiMessage = error.apiMessage ?? null;
  const type = isContextWindow(mapped.type, apiMessage) ? MODEL_FAILURE.contextWindow : mapped.type;
  const parts = [
    inStream ? `stream error ${errorType ?? 'unknown'}` : `${error.status} ${errorType ?? 'error'}`,
    apiMessage ? `: ${apiMessage}` : '',
    requestId ? ` (request-id ${requestId})` : '',
    AUTH_HINT[mapped.type] ? ` ${AUTH_HINT[mapped.type]}` : '',
  ];
  const details: ModelFailureDetails = {
    status: error.status ?? null,
    errorType,
    apiMessage,
    requestId,
    inStream,
    retryAfterMs: delay,
    failureClass: failureClassOf(type, retryable),
    usage: null,
  };
  return ApplicationFailure.create({
    type,
    message: parts.join(''),
    nonRetryable: !retryable,
    details: [details],
    ...(delay !== null ? { nextRetryDelay: Math.ceil(delay) } : {}),
  });
}

/** A 400 "prompt is too long" is the context window, which compaction can fix. */
function isContextWindow(type: ModelFailureType, apiMessage: string | null): boolean {
  return (type === MODEL_FAILURE.badRequest || type === MODEL_FAILURE.requestTooLarge) && apiMessage !== null && /prompt is too long|context window|context length/i.test(apiMessage);
}

/** Adds two attempts' usage; the sum is estimated if either part is. */
export function sumSpent(a: SpentUsage | null, b: SpentUsage | null): SpentUsage | null {
  if (a === null || b === null) return a ?? b;
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    costUsd: a.costUsd !== null && b.costUsd !== null ? a.costUsd + b.costUsd : null,
    estimated: a.estimated || b.estimated,
  };
}

/**
 * The failure with what the attempt spent attached (the workflow counts it); with
 * `callerRetries`, marked non-retryable for Temporal and its real retryability kept in
 * the details (see ModelCallInput.serverRetries).
 */
export function withSpentUsage(failure: ApplicationFailure, usage: SpentUsage | null, callerRetries = false): ApplicationFailure {
  if (usage === null && !callerRetries) return failure;
  const details = failure.details?.[0] as ModelFailureDetails | undefined;
  if (details === undefined) return failure;
  return ApplicationFailure.create({
    type: failure.type ?? MODEL_FAILURE.unexpected,
    message: failure.message,
    nonRetryable: callerRetries || failure.nonRetryable === true,
    details: [{ ...details, usage, ...(callerRetries ? { retryable: failure.nonRetryable !== true } : {}) }],
    ...(details.retryAfterMs !== null ? { nextRetryDelay: Math.ceil(details.retryAfterMs) } : {}),
  });
}

function failure(type: ModelFailureType, message: string, retryable: boolean, requestId: string | null = null): ApplicationFailure {
  const details: ModelFailureDetails = { ...NO_RESPONSE, requestId, failureClass: failureClassOf(type, retryable), usage: null };
  return ApplicationFailure.create({ type, message, nonRetryable: !retryable, details: [details] });
}

function isSocketDrop(error: Error): boolean {
  // undici reports a body cut short as `TypeError: terminated` (cause: SocketError).
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  return (
    error.message === 'terminated' ||
    cause?.code === 'UND_ERR_SOCKET' ||
    cause?.code === 'ECONNRESET' ||
    (typeof cause?.message === 'string' && /other side closed|socket hang up/i.test(cause.message))
  );
}

/**
 * Turns anything a model call throws into the ApplicationFailure Temporal acts on.
 * Never includes the API key: SDK errors do not carry it, and only their messages,
 * statuses and request ids are copied.
 */
export function classifyModelError(error: unknown, requestId: string | null = null): ApplicationFailure {
  if (error instanceof ApplicationFailure) return error;
  // A store error is not a model error: its own type, never retried as a model fault.
  if (error instanceof ConversationStoreError) return error.failure();
  if (error instanceof APIConnectionTimeoutError) {
    return failure(MODEL_FAILURE.timeout, 'The model API did not answer in time (request timed out).', true, requestId);
  }
  if (error instanceof APIUserAbortError) {
    // Only our own aborts end here; cancellation is handled before classification.
    return failure(MODEL_FAILURE.streamStalled, 'The model request was aborted.', true, requestId);
  }
  if (error instanceof APIConnectionError) {
    const cause = (error as { cause?: unknown }).cause;
    const reason = cause instanceof Error ? `${cause.message}${cause.cause instanceof Error ? ` (${cause.cause.message})` : ''}` : error.message;
    return failure(MODEL_FAILURE.connection, `Could not reach the model API: ${reason}`, true, requestId);
  }
  if (error instanceof APIError) return fromApiError(error as ApiErrorFields);
  if (error instanceof SyntaxError) {
    return failure(MODEL_FAILURE.malformedResponse, `The model API sent malformed JSON: ${error.message}`, false, requestId);
  }
  if (error instanceof AnthropicError) {
    return failure(MODEL_FAILURE.client, `The Anthropic SDK rejected the call: ${error.message}`, false, requestId);
  }
  if (error instanceof Error && isSocketDrop(error)) {
    return failure(MODEL_FAILURE.streamDropped, `The connection to the model API dropped mid-response (${error.message}).`, true, requestId);
  }
  const message = error instanceof Error ? error.message : String(error);
  return failure(MODEL_FAILURE.unexpected, `Model call failed: ${message}`, true, requestId);
}

export function apiKeyMissingFailure(): ApplicationFailure {
  return failure(
    MODEL_FAILURE.apiKeyMissing,
    "ANTHROPIC_API_KEY is not set in the worker's environment. Set it and restart the worker " +
      '(for the local stand-in any non-empty key works, with ANTHROPIC_BASE_URL pointing at it).',
    false,
  );
}

export function streamDroppedFailure(detail: string, requestId: string | null): ApplicationFailure {
  return failure(MODEL_FAILURE.streamDropped, `The model stream ended early: ${detail}.`, true, requestId);
}

export function streamStalledFailure(idleMs: number, requestId: string | null): ApplicationFailure {
  return failure(MODEL_FAILURE.streamStalled, `The model stream sent nothing for ${idleMs} ms; giving up on this attempt.`, true, requestId);
}

export function invalidInputFailure(problem: string): ApplicationFailure {
  return failure(MODEL_FAILURE.invalidInput, `The model call input is invalid: ${problem}`, false);
}

/** The call was not sent: even shrunk, its worst case could cross `limit`. `usage`: what was spent before it (a compaction). */
export function overBudgetFailure(over: NonNullable<ModelFailureDetails['overBudget']>, usage: SpentUsage | null): ApplicationFailure {
  const details: ModelFailureDetails = { ...NO_RESPONSE, failureClass: 'fatal', usage, retryable: false, overBudget: over };
  return ApplicationFailure.create({
    type: MODEL_FAILURE.overBudget,
    message: `not sent: its worst case needs ${over.needed} of ${over.limit}, ${over.left} left`,
    nonRetryable: true,
    details: [details],
  });
}
