// Keel's HTTP API from a browser (or any fetch): every request carries the bearer token; there
// are no cookies (credentials: 'omit'), so a page elsewhere cannot ride on a signed-in browser.
// A refusal (4xx/5xx) becomes a KeelHttpError carrying the problem document's reason.
import { followRun, type Follow } from './stream';
import type { StreamItem } from './run-state';
import type { ApproveRequest, DenyRequest, GoalView, InboxItem, ListEntry, SessionView, StartGoalRequest, StartSessionRequest } from './types';

export interface KeelHttpOptions {
  /** The server's origin, e.g. `http://localhost:4000` ('' or absent: the page's own origin). A page on another origin must be listed in the server's KEEL_CORS_ORIGINS. */
  baseUrl?: string;
  /** The bearer token (`keel serve` prints a login link; KEEL_API_TOKEN sets one), or a function that reads it at each request. */
  token: string | (() => string | null);
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
}

/** A request the server refused: its HTTP status and the problem document's reason. */
export class KeelHttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** The workflow's refusal code (`guard_failed`, `unknown_call`, …) when it refused. */
    readonly code: string | null,
  ) {
    super(message);
    this.name = 'KeelHttpError';
  }
}

const enc = encodeURIComponent;

export class KeelHttp {
  readonly baseUrl: string;
  private readonly tokenOf: () => string | null;
  private readonly doFetch: typeof fetch;

  constructor(options: KeelHttpOptions) {
    this.baseUrl = (options.baseUrl ?? '').replace(/\/+$/, '');
    const t = options.token;
    this.tokenOf = typeof t === 'function' ? t : () => t;
    this.doFetch = options.fetch ?? ((...a: Parameters<typeof fetch>) => fetch(...a));
  }

  /** One request; the parsed JSON answer. */
  async request<T>(method: 'GET' | 'POST', path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
    const res = await this.doFetch(`${this.baseUrl}${path}`, {
      method,
      headers: { Authorization: `Bearer ${this.tokenOf() ?? ''}`, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      credentials: 'omit',
    });
    const data = (res.headers.get('content-type')?.includes('json') ? await res.json() : null) as (T & { reason?: string; detail?: string; code?: string }) | null;
    if (!res.ok) throw new KeelHttpError(res.status, data?.reason ?? data?.detail ?? `${res.status} ${res.statusText}`, data?.code ?? null);
    return data as T;
  }

  /** Follows a workflow's stream (events and model text) from its start, resuming after drops. */
  follow(id: string, onItem: (item: StreamItem) => void, onEnd: () => void): Follow {
    return followRun(id, { baseUrl: this.baseUrl, token: this.tokenOf, fetch: this.doFetch }, onItem, onEnd);
  }

  startSession(body: StartSessionRequest = {}): Promise<{ id: string; kind: 'session' }> {
    return this.request('POST', '/api/sessions', body);
  }
  startGoal(body: StartGoalRequest, idempotencyKey?: string): Promise<{ id: string; kind: 'goal' }> {
    return this.request('POST', '/api/goals', body, idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {});
  }
  session(id: string): Promise<SessionView> {
    return this.request('GET', `/api/sessions/${enc(id)}`);
  }
  goal(id: string): Promise<GoalView> {
    return this.request('GET', `/api/goals/${enc(id)}`);
  }
  async inbox(): Promise<InboxItem[]> {
    return (await this.request<{ items: InboxItem[] }>('GET', '/api/inbox')).items;
  }
  async list(query: { kind?: 'goal' | 'session' | 'agent'; status?: string; waiting?: boolean; limit?: number } = {}): Promise<ListEntry[]> {
    const q = new URLSearchParams(Object.entries(query).filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)]));
    return (await this.request<{ items: ListEntry[] }>('GET', `/api/workflows${q.size ? `?${q}` : ''}`)).items;
  }
  send(sessionId: string, text: string, messageId?: string): Promise<{ status: string }> {
    return this.request('POST', `/api/sessions/${enc(sessionId)}/messages`, messageId ? { text, messageId } : { text });
  }
  interrupt(sessionId: string, reason?: string): Promise<{ status: string }> {
    return this.request('POST', `/api/sessions/${enc(sessionId)}/interrupt`, reason ? { reason } : {});
  }
  steer(sessionId: string, text: string): Promise<{ status: string }> {
    return this.request('POST', `/api/sessions/${enc(sessionId)}/steer`, { text });
  }
  answer(sessionId: string, text: string): Promise<{ status: string }> {
    return this.request('POST', `/api/sessions/${enc(sessionId)}/answer`, { text });
  }
  close(sessionId: string, reason?: string): Promise<{ status: string }> {
    return this.request('POST', `/api/sessions/${enc(sessionId)}/close`, reason ? { reason } : {});
  }
  /** Approves a waiting tool call of a session or goal (the approver is the token's holder). */
  approve(workflowId: string, body: ApproveRequest): Promise<{ status: string }> {
    return this.request('POST', `/api/workflows/${enc(workflowId)}/approve`, body);
  }
  deny(workflowId: string, body: DenyRequest): Promise<{ status: string }> {
    return this.request('POST', `/api/workflows/${enc(workflowId)}/deny`, body);
  }
  approvePlan(goalId: string): Promise<{ status: string }> {
    return this.request('POST', `/api/goals/${enc(goalId)}/plan/approve`);
  }
  rejectPlan(goalId: string, feedback: string): Promise<{ status: string }> {
    return this.request('POST', `/api/goals/${enc(goalId)}/plan/reject`, { feedback });
  }
  cancelGoal(goalId: string, reason?: string): Promise<{ status: string }> {
    return this.request('POST', `/api/goals/${enc(goalId)}/cancel`, reason ? { reason } : {});
  }
}
