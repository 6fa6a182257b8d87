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

/** `fetch` that reports each response body chunk to the counter of the request's context. */
const countingFetch: typeof fetch = async (input, init) => {
  const onBytes = byteCounters.getStore();
  const response = await fetch(input, init);
  if (!response.body || !onBytes) return response;
  const counter = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      onBytes(chunk.byteLength);
      controller.enqueue(chunk);
    },
  });
  return new Response(response.body.pipeThrough(counter), {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
};
