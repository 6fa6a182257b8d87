// How the stand-in writes an answer: a JSON Message or an SSE stream paced by the reply's
// delay, a scripted HTTP error with its retry headers, or a fault that strikes after a
// number of events (an in-stream error, a hang, a dropped socket, malformed JSON).
import type { ServerResponse } from 'node:http';
import { errorBody, STATUS_OF_ERROR_TYPE } from './api-errors';
import { type ApiMessage, renderStream, sseFrame } from './message';
import type { ApiErrorType, Fault, Reply } from './scenario';

/** What the fault and reply writers report about how a request ended. */
export type WriteOutcome = 'completed' | 'stream_error' | 'dropped' | 'malformed_json' | 'hanging' | 'client_closed';

export interface Io {
  res: ServerResponse;
  closed: Promise<void>;
  isClosed(): boolean;
  drop(): void;
  /** Characters of generated content (text, thinking, tool input) in the whole stream, and written so far: what a client that closes early is billed for. */
  generated?: { total: number; written: number };
}

/** Characters of generated content an SSE event carries (0 for all but content deltas). */
export function generatedChars(event: { event: string; data: Record<string, unknown> }): number {
  if (event.event !== 'content_block_delta') return 0;
  const delta = event.data.delta as Record<string, unknown> | undefined;
  const text = delta?.text ?? delta?.thinking ?? delta?.partial_json;
  return typeof text === 'string' ? text.length : 0;
}

export async function streamReply(io: Io, message: ApiMessage, reply: Reply, fault: Fault | undefined, rid: string): Promise<WriteOutcome> {
  const { res } = io;
  if (fault?.kind === 'hang' && fault.afterEvents === undefined) {
    await io.closed;
    return 'hanging';
  }
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
  });
  res.flushHeaders();
  const midStream = fault && fault.kind !== 'status' ? fault : undefined;
  let written = 0;
  const events = renderStream(message, reply.chunkSize);
  if (io.generated !== undefined) io.generated.total = events.reduce((n, e) => n + generatedChars(e), 0);
  for (const event of events) {
    if (io.isClosed()) return 'client_closed';
    if (midStream && event.event !== 'ping' && written === midStream.afterEvents) {
      return strikeMidStream(io, midStream, rid, 'stream');
    }
    if (event.delta && reply.delayMs > 0) {
      await sleepUnlessClosed(reply.delayMs, io.closed);
      if (io.isClosed()) return 'client_closed';
    }
    res.write(sseFrame(event.event, event.data));
    if (io.generated !== undefined) io.generated.written += generatedChars(event);
    if (event.event !== 'ping') written += 1;
  }
  // A fault scripted past the last event strikes after message_stop.
  if (midStream && midStream.afterEvents !== undefined && written <= midStream.afterEvents) {
    return strikeMidStream(io, midStream, rid, 'stream');
  }
  res.end();
  return 'completed';
}

async function strikeMidStream(io: Io, fault: Exclude<Fault, { kind: 'status' }>, rid: string, mode: 'stream' | 'json'): Promise<WriteOutcome> {
  const { res } = io;
  switch (fault.kind) {
    case 'stream_error':
      res.end(sseFrame('error', errorBody(fault.errorType, rid, fault.message)));
      return 'stream_error';
    case 'hang':
      await io.closed;
      return 'hanging';
    case 'drop':
      io.drop();
      return 'dropped';
    case 'malformed_json':
      res.end(
        mode === 'stream'
          ? 'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_de\n\n'
          : '{"id":"msg_01',
      );
      return 'malformed_json';
  }
}

export async function jsonReply(io: Io, message: ApiMessage, fault: Fault | undefined, rid: string): Promise<WriteOutcome> {
  const { res } = io;
  // `cutAfterChars` scripts a stream; it is not part of the API's message.
  const text = JSON.stringify(message, (key, value: unknown) => (key === 'cutAfterChars' ? undefined : value));
  if (!fault || fault.kind === 'status') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(text);
    return 'completed';
  }
  switch (fault.kind) {
    case 'stream_error': {
      // Without a stream the same failure arrives as an HTTP error.
      sendError(res, STATUS_OF_ERROR_TYPE[fault.errorType], fault.errorType, rid, fault.message);
      return 'stream_error';
    }
    case 'hang':
      if (fault.afterEvents !== undefined) {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
        res.write(text.slice(0, Math.floor(text.length / 2)));
      }
      await io.closed;
      return 'hanging';
    case 'drop':
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.write(text.slice(0, Math.floor(text.length / 2)));
      io.drop();
      return 'dropped';
    case 'malformed_json':
      res.writeHead(200, { 'content-type': 'application/json' });
      return strikeMidStream(io, fault, rid, 'json');
  }
}

export function sendError(
  res: ServerResponse,
  status: number,
  type: ApiErrorType,
  rid: string,
  message?: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(errorBody(type, rid, message)));
}

export function faultHeaders(fault: Extract<Fault, { kind: 'status' }>): Record<string, string> {
  const headers: Record<string, string> = {};
  if (fault.retryAfter !== undefined) headers['retry-after'] = String(fault.retryAfter);
  if (fault.retryAfterMs !== undefined) headers['retry-after-ms'] = String(fault.retryAfterMs);
  if (fault.shouldRetry !== undefined) headers['x-should-retry'] = String(fault.shouldRetry);
  return headers;
}

async function sleepUnlessClosed(ms: number, closed: Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))), closed]);
  clearTimeout(timer);
}
