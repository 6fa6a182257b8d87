// React hooks over Keel's HTTP/SSE API. Each page follows its workflow's stream (events and
// the model's text as it is written) and re-reads the workflow's view when an event arrives,
// so what it shows is the server's state, never a guess; actions are plain requests whose
// effect arrives by the same stream.
import { createContext, createElement, useCallback, useContext, useEffect, useMemo, useRef, useState, type ReactNode } from 'react';
import { KeelHttp, type KeelHttpOptions } from './http/client';
import { applyRunItem, emptyRun, endRun, modelTrouble, type LogEntry, type ModelCall, type ModelTrouble, type RunStream } from './http/run-state';
import type { ApproveRequest, GoalView, InboxItem, Message, PendingApproval, SessionView, Task } from './http/types';

const KeelContext = createContext<KeelHttp | null>(null);

/** Gives the hooks below a client: pass one, or the options to make one. */
export function KeelProvider(props: { children?: ReactNode; client?: KeelHttp } & Partial<KeelHttpOptions>): ReactNode {
  const { client, baseUrl, token, fetch: f } = props;
  const value = useMemo(() => client ?? new KeelHttp({ baseUrl, token: token ?? (() => null), ...(f ? { fetch: f } : {}) }), [client, baseUrl, token, f]);
  return createElement(KeelContext.Provider, { value }, props.children);
}

/** The client of the nearest KeelProvider. */
export function useKeel(): KeelHttp {
  const client = useContext(KeelContext);
  if (!client) throw new Error('useKeel: no <KeelProvider> above this component');
  return client;
}

/**
 * Follows a workflow's stream (a session, a goal, a task agent or a sub-agent) from its
 * start: its event log, its model calls and the one being written now. Renders at most once
 * a frame however fast the text arrives.
 */
export function useRun(id: string | null): RunStream {
  const keel = useKeel();
  const acc = useRef<RunStream>(emptyRun());
  const [, setTick] = useState(0);
  useEffect(() => {
    acc.current = emptyRun();
    setTick((t) => t + 1);
    if (!id) return;
    const byKey = new Map<string, ModelCall>();
    let frame = 0;
    const schedule = () => {
      if (!frame) frame = requestAnimationFrame(() => ((frame = 0), setTick((t) => t + 1)));
    };
    const f = keel.follow(
      id,
      (item) => {
        applyRunItem(acc.current, byKey, item);
        schedule();
      },
      () => {
        endRun(acc.current);
        schedule();
      },
    );
    return () => {
      f.stop();
      cancelAnimationFrame(frame);
    };
  }, [keel, id]);
  return acc.current;
}

/** Reads `load()` now and again after each event of the run (once a burst of events settles). */
function useView<T>(load: (() => Promise<T>) | null, version: number, key: string): { data: T | null; error: Error | null; reload: () => void } {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const [nudge, setNudge] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  useEffect(() => setData(null), [key]);
  useEffect(() => {
    const l = loadRef.current;
    if (!l) return;
    let stopped = false;
    const timer = setTimeout(() => {
      l().then(
        (d) => !stopped && (setData(d), setError(null)),
        (e: unknown) => !stopped && setError(e instanceof Error ? e : new Error(String(e))),
      );
    }, version === 0 ? 0 : 150);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [key, version, nudge]);
  return { data, error, reload: useCallback(() => setNudge((n) => n + 1), []) };
}

/** Runs an action and keeps its error (null when the last one worked). */
function useAction(): { error: Error | null; run: <T>(p: () => Promise<T>) => Promise<T | null> } {
  const [error, setError] = useState<Error | null>(null);
  const run = useCallback(async <T,>(p: () => Promise<T>): Promise<T | null> => {
    try {
      const r = await p();
      setError(null);
      return r;
    } catch (e) {
      setError(e instanceof Error ? e : new Error(String(e)));
      return null;
    }
  }, []);
  return { error, run };
}

export interface SessionHook {
  /** The server's view (state and transcript); null until read. */
  view: SessionView | null;
  status: string | null;
  /** The conversation so far (finished turns; the reply being written is `liveText`). */
  messages: readonly Message[];
  /** The model's reply as it is written (null when no call streams). */
  liveText: string | null;
  /** Every model call of the session with its text and thinking ('cut' when interrupted). */
  calls: readonly ModelCall[];
  events: readonly LogEntry[];
  /** Tool calls waiting for a human, a sub-agent's among them (`agent` says whose). */
  approvals: readonly PendingApproval[];
  /** The question the model asked the human, if it waits for an answer. */
  question: { callId: string; question: string } | null;
  /** The model failed or is being retried in the newest turn. */
  trouble: ModelTrouble | null;
  /** The newest error of a request (reading or acting); null when the last one worked. */
  error: Error | null;
  send(text: string): Promise<void>;
  interrupt(reason?: string): Promise<void>;
  steer(text: string): Promise<void>;
  approve(callId: string, options?: Omit<ApproveRequest, 'callId'>): Promise<void>;
  deny(callId: string, reason?: string): Promise<void>;
  answer(text: string): Promise<void>;
  close(reason?: string): Promise<void>;
}

/** A session: its conversation, the reply being written, what waits for you, and its controls. */
export function useSession(id: string | null): SessionHook {
  const keel = useKeel();
  const run = useRun(id);
  const view = useView(id ? () => keel.session(id) : null, run.version, id ?? '');
  const action = useAction();
  const act = useCallback(
    (f: (sid: string) => Promise<unknown>) => async () => {
      if (!id) return;
      await action.run(() => f(id));
    },
    [id, action.run],
  );
  const state = view.data?.state ?? null;
  return {
    view: view.data,
    status: state?.status ?? null,
    messages: view.data?.transcript.messages ?? [],
    liveText: run.live ? run.live.text : null,
    calls: run.calls,
    events: run.events,
    approvals: state?.pendingApprovals ?? [],
    question: state?.question ?? null,
    trouble: modelTrouble(run.events),
    error: action.error ?? view.error,
    send: (text) => act((s) => keel.send(s, text))(),
    interrupt: (reason) => act((s) => keel.interrupt(s, reason))(),
    steer: (text) => act((s) => keel.steer(s, text))(),
    approve: (callId, options) => act((s) => keel.approve(s, { callId, ...options }))(),
    deny: (callId, reason) => act((s) => keel.deny(s, reason ? { callId, reason } : { callId }))(),
    answer: (text) => act((s) => keel.answer(s, text))(),
    close: (reason) => act((s) => keel.close(s, reason))(),
  };
}

export interface GoalHook {
  view: GoalView | null;
  status: string | null;
  tasks: readonly Task[];
  /** The task agents' calls waiting for a human (each names its task and agent). */
  approvals: GoalView['state']['pendingApprovals'];
  events: readonly LogEntry[];
  error: Error | null;
  approvePlan(): Promise<void>;
  rejectPlan(feedback: string): Promise<void>;
  approve(callId: string, options?: Omit<ApproveRequest, 'callId'>): Promise<void>;
  deny(callId: string, reason?: string): Promise<void>;
  cancel(reason?: string): Promise<void>;
}

/** A goal: its plan's tasks (each with its agent, to follow with useRun), approvals and controls. */
export function useGoal(id: string | null): GoalHook {
  const keel = useKeel();
  const run = useRun(id);
  const view = useView(id ? () => keel.goal(id) : null, run.version, id ?? '');
  const action = useAction();
  const act = (f: (gid: string) => Promise<unknown>) => async () => {
    if (id) await action.run(() => f(id));
  };
  return {
    view: view.data,
    status: view.data?.state.status ?? null,
    tasks: view.data?.plan.tasks ?? [],
    approvals: view.data?.state.pendingApprovals ?? [],
    events: run.events,
    error: action.error ?? view.error,
    approvePlan: act((g) => keel.approvePlan(g)),
    rejectPlan: (feedback) => act((g) => keel.rejectPlan(g, feedback))(),
    approve: (callId, options) => act((g) => keel.approve(g, { callId, ...options }))(),
    deny: (callId, reason) => act((g) => keel.deny(g, reason ? { callId, reason } : { callId }))(),
    cancel: (reason) => act((g) => keel.cancelGoal(g, reason))(),
  };
}

export interface InboxHook {
  items: readonly InboxItem[];
  error: Error | null;
  approve(item: Extract<InboxItem, { type: 'tool_call' }>, options?: Omit<ApproveRequest, 'callId'>): Promise<void>;
  deny(item: Extract<InboxItem, { type: 'tool_call' }>, reason?: string): Promise<void>;
  answer(item: Extract<InboxItem, { type: 'question' }>, text: string): Promise<void>;
  approvePlan(item: Extract<InboxItem, { type: 'plan' }>): Promise<void>;
}

/** Everything that waits for a human on the server, read every `pollMs` (default 2 s) and after each action. */
export function useInbox(pollMs = 2000): InboxHook {
  const keel = useKeel();
  const [tick, setTick] = useState(0);
  const view = useView(() => keel.inbox(), tick, 'inbox');
  useEffect(() => {
    const t = setInterval(() => setTick((n) => n + 1), pollMs);
    return () => clearInterval(t);
  }, [pollMs]);
  const action = useAction();
  const after = async (p: () => Promise<unknown>) => {
    await action.run(p);
    setTick((n) => n + 1);
  };
  return {
    items: view.data ?? [],
    error: action.error ?? view.error,
    approve: (item, options) => after(() => keel.approve(item.workflowId, { callId: item.callId, ...options })),
    deny: (item, reason) => after(() => keel.deny(item.workflowId, reason ? { callId: item.callId, reason } : { callId: item.callId })),
    answer: (item, text) => after(() => keel.answer(item.workflowId, text)),
    approvePlan: (item) => after(() => keel.approvePlan(item.workflowId)),
  };
}
