// The error shapes of the real Messages API: the body `{"type":"error","error":{…},
// "request_id":…}` and the status each error type travels with.
import type { ApiErrorType } from './scenario';

export const STATUS_OF_ERROR_TYPE: Record<ApiErrorType, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

const DEFAULT_MESSAGE: Record<ApiErrorType, string> = {
  invalid_request_error: 'Invalid request',
  authentication_error: 'invalid x-api-key',
  billing_error: 'Your credit balance is too low to access the Anthropic API.',
  permission_error: 'Your API key does not have permission to use the specified resource.',
  not_found_error: 'Not found',
  request_too_large: 'Request exceeds the maximum allowed number of bytes.',
  rate_limit_error: 'Number of request tokens has exceeded your per-minute rate limit',
  api_error: 'Internal server error',
  timeout_error: 'Request timed out',
  overloaded_error: 'Overloaded',
};

/** The error type the real API pairs with an HTTP status. */
export function errorTypeForStatus(status: number): ApiErrorType {
  switch (status) {
    case 400:
    case 422:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 402:
      return 'billing_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 504:
      return 'timeout_error';
    case 529:
      return 'overloaded_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

export interface ApiErrorBody {
  type: 'error';
  error: { type: ApiErrorType; message: string };
  request_id: string;
}

export function errorBody(type: ApiErrorType, requestId: string, message?: string): ApiErrorBody {
  return { type: 'error', error: { type, message: message ?? DEFAULT_MESSAGE[type] }, request_id: requestId };
}
