// A local stand-in for the Anthropic Messages API (`POST /v1/messages`), faithful enough
// that the unmodified `@anthropic-ai/sdk` cannot tell it from the real service: the same
// auth and version checks, `request-id` on every response, the real error bodies and
// status/type pairs, and the real SSE event order. A scenario scripts every answer and
// every fault; a request no rule matches gets a clear error, never an invented answer.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { errorBody, errorTypeForStatus } from './api-errors';
import { requestId as newRequestId } from './ids';
import { describeFacts, factsOf, matches, type RequestFacts } from './match';
import { renderMessage } from './message';
import { isKnownModel } from '../machines/model-limits';
import { modelSpec } from '../machines/models';
import { requestProblem } from './request-rules';
import { renderResponse, responsesFacts } from './responses';
import { faultHeaders, type Io, jsonReply, sendError, streamReply, type WriteOutcome } from './respond';
import { parseScenario, type Reply, type Rule, type Scenario, type ScenarioInput } from './scenario';
import { type ApiUsage, PromptCacheSimulator } from './usage';

export type RequestOutcome =
  | 'pending'
  | 'rejected' // auth, version, body or path checks
  | 'unmatched'
  | 'status_fault'
  | WriteOutcome;

export interface RecordedRequest {
  /** 1-based, in arrival order. */
  seq: number;
  method: string;
  path: string;
  /** Lower-cased names; credentials redacted. */
  headers: Record<string, string>;
  /** How the client authenticated; the key itself is never recorded. */
  auth: 'bearer' | 'x-api-key' | null;
  body: unknown;
  requestId: string;
  facts: RequestFacts | null;
  rule: string | null;
  status: number | null;
  outcome: RequestOutcome;
  receivedAt: number;
  /** When the connection carrying this request closed (either side). */
  closedAt: number | null;
  /** The client went away before the response was complete. */
  clientClosedEarly: boolean;
  /** The usage the response reported (what the API would bill), when a reply was rendered. */
  usage: ApiUsage | null;
}

export interface StandinOptions {
  scenario: Scenario | ScenarioInput;
  port?: number;
  host?: string;
  /** One line per request, for people watching the stand-in. */
  log?: (line: string) => void;
  /** The clock of the simulated prompt cache (its 5-minute and 1-hour TTLs); tests move it. */
  now?: () => number;
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const REDACTED = '[redacted]';
const DEFAULT_MID_STREAM_REPLY: Reply = {
  content: [{ type: 'text', text: 'This reply is interrupted by the stand-in before it completes.' }],
  delayMs: 0,
  chunkSize: 8,
};

export class Standin {
  readonly requests: RecordedRequest[] = [];
  private readonly uses = new Map<number, number>();
  private cache: PromptCacheSimulator;
  private readonly watchers = new Set<() => void>();
  private scenario: Scenario;

  private constructor(
    private readonly server: Server,
    scenario: Scenario,
    private readonly log: ((line: string) => void) | undefined,
    private readonly now: () => number = Date.now,
  ) {
    this.scenario = scenario;
    this.cache = new PromptCacheSimulator(now);
  }

  static async start(options: StandinOptions): Promise<Standin> {
    const scenario = parseScenario(options.scenario);
    const holder: { standin?: Standin } = {};
    const server = createServer((req, res) => {
      holder.standin
        ?.handle(req, res).catch((error: unknown) => {
        options.log?.(`stand-in internal error: ${(error as Error).stack ?? String(error)}`);
        if (!res.headersSent) {
          res.writeHead(500, { 'content-type': 'application/json' });
          res.end(JSON.stringify(errorBody('api_error', newRequestId(), 'stand-in internal error')));
        } else {
          res.destroy();
        }
      });
    });
    const standin = new Standin(server, scenario, options.log, options.now);
    holder.standin = standin;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    return standin;
  }

  get url(): string {
    const address = this.server.address() as AddressInfo;
    const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    return `http://${host}:${address.port}`;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** Requests no rule matched: each was answered with an error naming what was asked. */
  get unmatched(): RecordedRequest[] {
    return this.requests.filter((request) => request.outcome === 'unmatched');
  }

  /** Replaces the script; usage counters and the simulated prompt cache start over. */
  setScenario(scenario: Scenario | ScenarioInput): void {
    this.scenario = parseScenario(scenario);
    this.uses.clear();
    this.cache = new PromptCacheSimulator(this.now);
  }

  /** Resolves with the first recorded request the predicate accepts, as records change. */
  async waitFor(predicate: (request: RecordedRequest) => boolean, timeoutMs = 10_000): Promise<RecordedRequest> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.requests.find(predicate);
        if (found) {
          cleanup();
          resolve(found);
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`stand-in: no request matched the awaited condition within ${timeoutMs} ms`));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        this.watchers.delete(check);
      };
      this.watchers.add(check);
      check();
    });
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private changed(): void {
    for (const watcher of [...this.watchers]) watcher();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const rid = newRequestId();
    const record: RecordedRequest = {
      seq: this.requests.length + 1,
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers: redactHeaders(req),
      auth: null,
      body: null,
      requestId: rid,
      facts: null,
      rule: null,
      status: null,
      outcome: 'pending',
      receivedAt: Date.now(),
      closedAt: null,
      clientClosedEarly: false,
      usage: null,
    };
    this.requests.push(record);
    let droppedByUs = false;
    // What a streamed answer has generated; set once one streams.
    const generated = { total: 0, written: 0 };
    const closed = new Promise<void>((resolve) => {
      res.on('close', () => {
        record.closedAt = Date.now();
        if (!res.writableFinished && !droppedByUs) {
          record.clientClosedEarly = true;
          if (record.outcome === 'pending' || record.outcome === 'hanging') record.outcome = 'client_closed';
          // The API bills a stream the client closed for what it had generated until then.
          if (record.usage !== null && record.facts?.stream === true && generated.total > 0) {
            record.usage.output_tokens = Math.max(1, Math.min(record.usage.output_tokens, Math.ceil((record.usage.output_tokens * generated.written) / generated.total)));
          }
        }
        resolve();
        this.changed();
      });
    });
    res.setHeader('request-id', rid);

    const reject = (status: number, message: string) => {
      record.status = status;
      record.outcome = 'rejected';
      sendError(res, status, errorTypeForStatus(status), rid, message);
      this.logRequest(record);
    };

    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'POST' && path === '/v1/responses') {
      this.handleResponses(req, body, record, res, reject);
      return;
    }
    if (req.method !== 'POST' || path !== '/v1/messages') {
      reject(404, 'Not found');
      return;
    }
    const auth = authOf(req);
    record.auth = auth.scheme;
    if (auth.key === null) {
      reject(401, 'x-api-key header is required');
      return;
    }
    if (this.scenario.apiKeys && !this.scenario.apiKeys.includes(auth.key)) {
      reject(401, auth.scheme === 'bearer' ? 'Invalid bearer token' : 'invalid x-api-key');
      return;
    }
    if (!req.headers['anthropic-version']) {
      reject(400, 'anthropic-version: header is required');
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      reject(400, 'There was an issue with the request body: the body is not valid JSON');
      return;
    }
    record.body = parsed;
    if (!isObject(parsed)) {
      reject(400, 'There was an issue with the request body: expected an object');
      return;
    }
    const missing = (['model', 'max_tokens', 'messages'] as const).find((field) => parsed[field] === undefined);
    if (missing) {
      reject(400, `${missing}: Field required`);
      return;
    }
    if (!Array.isArray(parsed.messages) || parsed.messages.length === 0) {
      reject(400, 'messages: at least one message is required');
      return;
    }
    const problem = requestProblem(parsed);
    if (problem !== null) {
      reject(400, problem);
      return;
    }
    const model = String(parsed.model);
    if (!isKnownModel(model) && !(this.scenario.models ?? []).includes(model)) {
      reject(404, `model: ${model}`);
      return;
    }

    const facts = factsOf(parsed, record.seq);
    record.facts = facts;
    const found = this.pickRule(facts);
    if (!found) {
      record.status = 500;
      record.outcome = 'unmatched';
      const message =
        `Keel stand-in: no rule in scenario "${this.scenario.name}" matches ${describeFacts(facts)}. ` +
        'Add a rule for it (or allow another use with `times`) — the stand-in never invents an answer.';
      this.log?.(message);
      sendError(res, 500, 'api_error', rid, message, { 'x-should-retry': 'false' });
      this.changed();
      return;
    }
    const { rule, index } = found;
    record.rule = rule.name ?? `rule ${index + 1}`;
    this.changed();

    const fault = rule.fault;
    if (fault?.kind === 'status') {
      record.status = fault.status;
      record.outcome = 'status_fault';
      sendError(res, fault.status, fault.errorType ?? errorTypeForStatus(fault.status), rid, fault.message, faultHeaders(fault));
      this.logRequest(record);
      return;
    }

    const reply = rule.reply ?? DEFAULT_MID_STREAM_REPLY;
    const usage = this.cache.usageFor(parsed, reply.content, reply.usage);
    record.usage = usage;
    // The API answers an alias with the snapshot it ran (claude-sonnet-4-0 → claude-sonnet-4-20250514).
    const message = renderMessage(reply, answeredAs(facts.model), usage);
    // The API never generates (nor bills) more than max_tokens: a scripted longer answer stops there.
    const maxTokens = typeof parsed.max_tokens === 'number' ? parsed.max_tokens : Infinity;
    if (usage.output_tokens > maxTokens) {
      usage.output_tokens = maxTokens;
      if (message.stop_reason === 'end_turn') message.stop_reason = 'max_tokens';
    }
    const io: Io = {
      res,
      closed,
      generated,
      isClosed: () => record.closedAt !== null,
      drop: () => {
        droppedByUs = true;
        res.socket?.destroy();
      },
    };
    const outcome = facts.stream
      ? await streamReply(io, message, reply, fault, rid)
      : await jsonReply(io, message, fault, rid);
    if (record.outcome === 'pending') record.outcome = outcome;
    record.status = res.statusCode;
    this.logRequest(record);
    this.changed();
  }

  /** The OpenAI Responses API, non-streaming, over the same rules (standin/responses.ts). */
  private handleResponses(req: IncomingMessage, body: string, record: RecordedRequest, res: ServerResponse, reject: (status: number, message: string) => void): void {
    const auth = authOf(req);
    record.auth = auth.scheme;
    if (auth.key === null) return reject(401, 'You didn\'t provide an API key.');
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      return reject(400, 'the body is not valid JSON');
    }
    record.body = parsed;
    if (!isObject(parsed) || typeof parsed.model !== 'string') return reject(400, "Missing required parameter: 'model'.");
    if (parsed.stream === true) return reject(400, 'Keel stand-in: the Responses API is served without streaming only');
    const facts = responsesFacts(parsed, record.seq);
    record.facts = facts;
    const found = this.pickRule(facts);
    if (!found?.rule.reply) {
      record.status = 500;
      record.outcome = 'unmatched';
      res.writeHead(500, { 'content-type': 'application/json', 'x-should-retry': 'false' });
      res.end(JSON.stringify({ error: { type: 'server_error', message: `Keel stand-in: no rule in scenario "${this.scenario.name}" matches ${describeFacts(facts)}` } }));
      this.changed();
      return;
    }
    record.rule = found.rule.name ?? `rule ${found.index + 1}`;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(renderResponse(found.rule.reply, parsed.model)));
    record.status = 200;
    record.outcome = 'completed';
    this.logRequest(record);
    this.changed();
  }

  private pickRule(facts: RequestFacts): { rule: Rule; index: number } | null {
    for (const [index, rule] of this.scenario.rules.entries()) {
      const used = this.uses.get(index) ?? 0;
      if (rule.times !== undefined && used >= rule.times) continue;
      if (!matches(rule.match, facts)) continue;
      this.uses.set(index, used + 1);
      return { rule, index };
    }
    return null;
  }

  private logRequest(record: RecordedRequest): void {
    this.log?.(
      `#${record.seq} ${record.method} ${record.path} turn ${record.facts?.turn ?? '-'} ` +
        `rule ${record.rule ?? '-'} -> ${record.status ?? '-'} ${record.outcome} (${record.requestId})`,
    );
  }
}

export async function startStandin(options: StandinOptions): Promise<Standin> {
  return Standin.start(options);
}

function authOf(req: IncomingMessage): { scheme: RecordedRequest['auth']; key: string | null } {
  const header = req.headers.authorization;
  const bearer = typeof header === 'string' ? /^Bearer\s+(.+)$/i.exec(header.trim())?.[1] : undefined;
  if (bearer) return { scheme: 'bearer', key: bearer };
  const apiKey = req.headers['x-api-key'];
  if (typeof apiKey === 'string' && apiKey.trim() !== '') return { scheme: 'x-api-key', key: apiKey.trim() };
  return { scheme: null, key: null };
}

function redactHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    const text = Array.isArray(value) ? value.join(', ') : value;
    if (name === 'authorization') out[name] = /^Bearer\s/i.test(text) ? `Bearer ${REDACTED}` : REDACTED;
    else if (name === 'x-api-key') out[name] = REDACTED;
    else out[name] = text;
  }
  return out;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const chunk of req) parts.push(chunk as Buffer);
  return Buffer.concat(parts).toString('utf8');
}

/** The model id a response names: a dated id as asked, an alias as the dated snapshot it stands for. */
export function answeredAs(model: string): string {
  if (/-\d{8}$/.test(model)) return model;
  return modelSpec(model)?.billedAs ?? model;
}
