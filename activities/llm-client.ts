// One `Anthropic` client per API key and base URL, shared by every model call of the worker.
// Building a client per call cost ~0.5 ms of worker CPU a step (its resource tree: `Beta`,
// `Organization`, …; bench profile 2026-11-28), and nothing in it is per call: the timeout
// and the abort signal go with each request, and each call's byte counter is found by the
// shared `fetch` through an AsyncLocalStorage, in the context the call's request was made in.
import { AsyncLocalStorage } from 'node:async_hooks';
import Anthropic from '@anthropic-ai/sdk';

/** Clients kept: a worker has one key and base URL; tests and key rotation make a few more. */
const MAX_CLIENTS = 8;

const clients = new Map<string, Anthropic>();
const byteCounters = new AsyncLocalStorage<(bytes: number) => void>();

/** The shared client for a key and a base URL (null: the real API). Temporal owns retries: the SDK's are off. */
export function anthropicClient(apiKey: string, baseURL: string | null): Anthropic {
  const id = `${baseURL ?? ''}\n${apiKey}`;
  let client = clients.get(id);
  if (client) return client;
  // The oldest goes first (Map keeps insertion order).
  if (clients.size >= MAX_CLIENTS) clients.delete(clients.keys().next().value!);
  client = new Anthropic({ apiKey, baseURL, maxRetries: 0, fetch: countingFetch });
  clients.set(id, client);
  return client;
}

/** Runs `request` with `onBytes` told the bytes of each response body chunk its requests receive. */
export function countingBytes<T>(onBytes: (bytes: number) => void, request: () => T): T {
  return byteCounters.run(onBytes, request);
}

/**
 * `fetch` that reports each response body chunk to the counter of the request's context. The
 * body is read through a stream that pulls a chunk only when the SDK asks for one: a
 * `TransformStream` piped in between cost five times the CPU (a pipe's promises and two queues:
 * +0.57 against +0.10 ms over not counting, for a call of 60 chunks; bench/byte-counter.ts,
 * docs/performance.md's fourteenth part), for the same bytes, in the same order, with the same errors.
 */
const countingFetch: typeof fetch = async (input, init) => {
  const onBytes = byteCounters.getStore();
  const response = await fetch(input, init);
  if (!response.body || !onBytes) return response;
  const reader: ReadableStreamDefaultReader<Uint8Array> = response.body.getReader();
  const counted = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) return controller.close();
        onBytes(value.byteLength);
        controller.enqueue(value);
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
  return new Response(counted, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
};
