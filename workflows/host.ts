// The machine host every Keel workflow runs on (session, goal, agent). It owns what they
// used to repeat: the serial event queue, the event log (stream topic, sequence numbers,
// telemetry), durable timers, applying events to machines with observers (transition
// counters for the `metrics` query), the directives every machine shares (emit_event,
// start_timer, cancel_timer), signal/update plumbing, what people see (details and
// search attributes, written only when they change), unknown message names, and what a
// run hands the next through continue-as-new. A workflow file keeps its inputs, one line
// per handler into the host, and the handlers of its own directives.
import { newerBuildTargeted } from './versioning';
import {
  allHandlersFinished,
  condition,
  type defineUpdate,
  log,
  setCurrentDetails,
  setDefaultSignalHandler,
  setDefaultUpdateHandler,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
  type SignalDefinition,
} from '@temporalio/workflow';
import type { WorkflowStreamState } from '@temporalio/workflow-streams/workflow';
import { createCounters, observe, type Machine, type Observer, type TransitionCounts, type TransitionError, type TransitionResult } from '../machines/core';
import type { LogEvent } from '../machines/index';
import { EVENTS_TOPIC, metricsQuery, type MetricsView, type RunnerEvent } from './definitions';
import { eventsPage } from './event-log';
import { KeelStream } from './keel-stream';
import { rejectUnknownUpdate, unknownSignal } from './payloads';
import { preview } from './preview';
import { machineRefusal, validated } from './refusal';
import { SerialQueue, Timers } from './runtime';
import { type LiveCalls, registerStreamRead } from './stream-read';
import { KeelKind, KeelPendingApprovals, KeelStatus, KeelWorkspace } from './search-attributes';
import { reportEvent } from './telemetry-sink';
import { beginSession, traceEvent } from './trace';
import { hasPatch, runFormat } from './run-format';

/** The directives every machine shares; the host executes them itself. */
export type CommonDirective =
  | { readonly type: 'emit_event'; readonly event: LogEvent }
  | { readonly type: 'start_timer'; readonly timerId: string; readonly durationMs: number }
  | { readonly type: 'cancel_timer'; readonly timerId: string };

/** What people see of a workflow: its details (markdown) and two search attributes. */
export interface HostView {
  details: string;
  /** The machine's state (what runs written before RESTING_STATUS_PATCH put in KeelStatus). */
  status: string;
  /** KeelStatus: where the workflow rests, not each step of a turn (machines/search-status.ts); `status` when every state is one. */
  searchStatus?: string;
  pendingApprovals: number;
}

/** KeelStatus shows resting states only: no upsert per turn or per step. */
export const RESTING_STATUS_PATCH = 'keel-resting-search-status';

/** What one run hands the next: the event log, timers and counters. */
export interface HostCarry {
  stream: WorkflowStreamState;
  /** Timers still running, by when they fire (workflow time, ms since the epoch). */
  timers: Record<string, number>;
  nextSeq: number;
  metrics?: Record<string, TransitionCounts> | undefined;
}

export interface HostOptions<Event> {
  kind: 'session' | 'goal' | 'agent';
  workspace: string;
  /** The field naming the workflow in each log entry (sessions say sessionId). */
  idField: 'sessionId' | 'workflowId';
  /** Message names the workflow knows (for the unknown-name reply). */
  signals: readonly string[];
  carry?: HostCarry | undefined;
  /** Sees each event before it is logged (the agent reads its evidence off them). */
  tap?: (event: Event) => void;
  view: () => HostView;
  /** After what people see is refreshed (the agent reports to its goal here). */
  afterReport?: () => void;
  /** The model calls in flight, by call id: stream readers keep their busy pace and show their live text (workflows/stream-read.ts). */
  live?: LiveCalls;
}

/** Event-log bytes kept across continue-as-new: the newest entries; older ones are trimmed (offsets stay). */
const STREAM_KEEP_BYTES = 192 * 1024;

type Typed = { readonly type: string };
type UpdateDefinition<R> = ReturnType<typeof defineUpdate<R, [unknown?]>>;
type Status = { readonly status: string };
type LoggedEvent = LogEvent | RunnerEvent;

export class MachineHost<Entry extends { seq: number }, Event extends { kind: string } = LoggedEvent> {
  readonly workflowId = workflowInfo().workflowId;
  readonly stream: KeelStream;
  readonly timers = new Timers();
  readonly queue: SerialQueue;
  seq: number;
  private readonly topic;
  private readonly counters = new Map<string, ReturnType<typeof createCounters>>();
  private reported = '';
  private readonly resting: boolean;

  constructor(private readonly options: HostOptions<Event>) {
    this.stream = new KeelStream(options.carry?.stream);
    this.topic = this.stream.topic<Entry>(EVENTS_TOPIC);
    registerStreamRead(this.stream, () => options.live?.() ?? []);
    this.seq = options.carry?.nextSeq ?? 0;
    // Asked once, in the run's first activation: a run recorded before the patch keeps
    // writing the machine's state, so its history replays.
    this.resting = hasPatch(RESTING_STATUS_PATCH);
    // A stamped run shows what it was started with: no need to write it again.
    if (runFormat() >= 1) this.reported = reportedAtStart();
    this.queue = new SerialQueue(() => this.report());
    for (const [machine, counts] of Object.entries(options.carry?.metrics ?? {})) this.counters.set(machine, createCounters(counts));
    setHandler(metricsQuery, () => this.metrics());
    // A session's turns are traces of their own (goals and agents begin theirs in workflows/index.ts).
    if (options.kind === 'session') beginSession();
  }

  /** The clock while a local call's result is applied (stampAt); null: the workflow's. */
  private stamp: number | null = null;

  now = (): number => this.stamp ?? Date.now();

  /**
   * Applies `work` (a local call's result) with the clock read as `at`, a time taken from the
   * run's history (machines/tool-result.ts localResultTime): what it publishes and starts reads
   * the same time in every replay, which the activation's own clock does not.
   */
  stampAt = (at: number, work: () => void): void => {
    const outer = this.stamp;
    this.stamp = at;
    try {
      work();
    } finally {
      this.stamp = outer;
    }
  };

  /** Appends an event to the log (and the worker's telemetry). */
  publish = (event: Event): void => {
    this.options.tap?.(event);
    const now = this.now();
    const at = new Date(now).toISOString();
    this.topic.publish({ ...preview(event as unknown as LogEvent), seq: this.seq++, at, [this.options.idField]: this.workflowId } as unknown as Entry);
    reportEvent(event, at);
    traceEvent(event, now);
  };

  /** A refused transition, recorded in the log. */
  rejected = (source: string, error: TransitionError): void => {
    this.publish({ kind: 'event.rejected', source, machine: error.machine, state: error.state, event: error.event, code: error.code, message: error.message } as unknown as Event);
  };

  /** Runs work on the serial queue (transitions never interleave). */
  post = (work: () => void): void => this.queue.post(work);

  /** Counts the transitions of a machine (observers run here, in the workflow, on every apply). */
  observer<St extends Status, Ev extends Typed, D>(machine: string): Observer<St, Ev, D> {
    let counters = this.counters.get(machine);
    if (!counters) this.counters.set(machine, (counters = createCounters()));
    return counters;
  }

  metrics(): MetricsView {
    return { machines: Object.fromEntries([...this.counters].map(([name, c]) => [name, c.snapshot()])) };
  }

  /** Runs a machine on this host: `execute` gets the directives the host does not handle itself. */
  drive<St extends Status, Ev extends Typed, D extends Typed>(
    machine: Machine<St, Ev, D>,
    initial: St,
    execute: (directive: Exclude<D, CommonDirective>) => void,
  ): Driven<St, Ev, D> {
    return new Driven(this, machine, initial, execute);
  }

  /** Refreshes details (no history) and search attributes (only when they change). */
  report(): void {
    const view = this.options.view();
    setCurrentDetails(view.details);
    const status = this.resting ? (view.searchStatus ?? view.status) : view.status;
    const key = `${status}|${view.pendingApprovals}`;
    if (key !== this.reported) {
      this.reported = key;
      upsertSearchAttributes([
        { key: KeelStatus, value: status },
        { key: KeelPendingApprovals, value: view.pendingApprovals },
      ]);
    }
    this.options.afterReport?.();
  }

  /** The log by query, as `events` answers it. */
  events(input: { from?: number; limit?: number }): { firstAvailable: number; entries: Entry[] } {
    return eventsPage<Entry>(this.stream, input, this.seq);
  }

  /**
   * Registers the default handlers (after every named one: a default handler takes what is
   * already buffered), writes the fixed search attributes and runs the first work.
   */
  start(machine: string, state: () => string, first: () => void): void {
    setDefaultSignalHandler((name) => this.post(() => this.publish(unknownSignal(machine, state(), name, this.options.signals) as unknown as Event)));
    setDefaultUpdateHandler((name) => rejectUnknownUpdate(name, this.options.signals));
    const given = workflowInfo().typedSearchAttributes;
    const shown = runFormat() >= 1 && given.get(KeelKind) === this.options.kind && given.get(KeelWorkspace) === this.options.workspace;
    if (!shown) {
      upsertSearchAttributes([
        { key: KeelKind, value: this.options.kind },
        { key: KeelWorkspace, value: this.options.workspace },
      ]);
    }
    this.post(first);
  }

  /** The end of a run: what people see is final, subscribers read the last events, handlers finish. */
  async finish(): Promise<void> {
    this.logMetrics('finished');
    this.report();
    this.stream.detachPollers();
    await condition(allHandlersFinished);
  }

  /** Timers outlive the run: re-arm each with what was left of it. */
  rearm(timers: Record<string, number>, fire: (timerId: string) => void): void {
    for (const [timerId, firesAt] of Object.entries(timers)) {
      this.timers.start(timerId, Math.max(1, firesAt - this.now()), () => this.post(() => fire(timerId)), this.now());
    }
  }

  /** Waits until `done`, or until `quiet` holds once every handler has finished: 'continue' then. */
  async settle(done: () => boolean, quiet: () => boolean): Promise<'done' | 'continue'> {
    this.stream.detachPollers();
    // A message handled while the handlers finish may start work: wait for quiet again.
    for (;;) {
      await condition(allHandlersFinished);
      if (done()) return 'done';
      if (quiet()) return 'continue';
      await condition(() => done() || quiet());
    }
  }

  /**
   * Whether the server suggests a new run, or this run's history passed `afterEvents`, or a
   * newer build is the deployment's target (workflows/versioning.ts: the new run starts there).
   */
  static wantsNewRun(whenSuggested: boolean, afterEvents: number | null | undefined): boolean {
    const info = workflowInfo();
    return (whenSuggested && info.continueAsNewSuggested) || (afterEvents != null && info.historyLength >= afterEvents) || newerBuildTargeted();
  }

  /** The worker's log gets each run's transition counts (the workflow logger: never on replay). */
  logMetrics(ending: 'finished' | 'continued as new'): void {
    log.info(`transition counts (${this.options.kind} ${ending})`, { workflowId: this.workflowId, machines: this.metrics().machines });
  }

  /** The event log (trimmed to its newest entries), timers and counters for the next run. */
  carry(): HostCarry {
    this.logMetrics('continued as new');
    const state = this.stream.state();
    let kept = 0;
    let trim = state.log.length;
    while (trim > 0 && kept + state.log[trim - 1]!.data.length <= STREAM_KEEP_BYTES) kept += state.log[--trim]!.data.length;
    return {
      stream: trim > 0 ? { ...state, log: state.log.slice(trim), base_offset: state.base_offset + trim } : state,
      timers: this.timers.deadlines(),
      nextSeq: this.seq,
      metrics: this.metrics().machines,
    };
  }
}

/** What a driven machine needs of its host. */
interface DrivenHost {
  readonly timers: Timers;
  now(): number;
  post(work: () => void): void;
  publish(event: never): void;
  rejected(source: string, error: TransitionError): void;
  observer<St extends Status, Ev extends Typed, D>(machine: string): Observer<St, Ev, D>;
}

/** One machine on a host: its state, and every way an event reaches it. */
export class Driven<St extends Status, Ev extends Typed, D extends Typed> {
  private readonly transition: (state: St, event: Ev) => TransitionResult<St, D>;

  constructor(
    private readonly host: DrivenHost,
    readonly machine: Machine<St, Ev, D>,
    public state: St,
    private readonly own: (directive: Exclude<D, CommonDirective>) => void,
  ) {
    this.transition = observe(machine, host.observer<St, Ev, D>(machine.name));
  }

  /** Applies an event and executes its directives; a refusal is returned, not recorded. */
  apply(event: Ev): TransitionResult<St, D> {
    const result = this.transition(this.state, event);
    if (!result.ok) return result;
    this.state = result.state;
    for (const directive of result.directives) this.dispatch(directive);
    return result;
  }

  /** Applies an event; a refusal goes to the log, naming `source`. */
  record(source: string, event: Ev | null): void {
    if (event === null) return;
    const result = this.apply(event);
    if (!result.ok) this.host.rejected(source, result.error);
  }

  /** `record` on the queue. */
  post(source: string, event: Ev): void {
    this.host.post(() => this.record(source, event));
  }

  /** Update validators: throws the machine's reason when it would refuse the event now. */
  mustAccept(event: Ev): void {
    const r = this.machine.transition(this.state, event);
    if (!r.ok) throw machineRefusal(r.error);
  }

  /** A signal's event: applied, or recorded as refused when it cannot even be built. */
  signalled(name: string, build: () => Ev): void {
    this.host.post(() => {
      let event: Ev;
      try {
        event = build();
      } catch (error) {
        this.host.rejected(`signal ${name}`, { code: 'guard_failed', machine: this.machine.name, state: this.state.status, event: name, message: (error as Error).message });
        return;
      }
      this.record(`signal ${name}`, event);
    });
  }

  /** A control that is both a signal and an update (the update's validator dry-runs the machine). */
  control<R>(name: string, signal: { name: string }, update: { name: string }, build: (raw: unknown) => Ev, result: () => R): void {
    setHandler(signal as SignalDefinition<[unknown?]>, (raw?: unknown) => this.signalled(name, () => build(raw)));
    setHandler(
      update as UpdateDefinition<R>,
      (raw?: unknown) => {
        this.post(`update ${name}`, build(raw));
        return result();
      },
      { validator: (raw?: unknown) => this.mustAccept(validated(() => build(raw))) },
    );
  }

  /** Directives a machine returned before it ran here (its creation's). */
  execute(directives: readonly D[]): void {
    for (const directive of directives) this.dispatch(directive);
  }

  private dispatch(d: D): void {
    const common = d as unknown as CommonDirective;
    switch (common.type) {
      case 'emit_event':
        this.host.publish(common.event as never);
        return;
      case 'start_timer':
        this.host.timers.start(common.timerId, common.durationMs, () => this.post(`timer ${common.timerId}`, this.timerFired(common.timerId)), this.host.now());
        return;
      case 'cancel_timer':
        this.host.timers.cancel(common.timerId);
        return;
      default:
        this.own(d as Exclude<D, CommonDirective>);
    }
  }

  timerFired(timerId: string): Ev {
    return { type: 'timer_fired', timerId } as unknown as Ev;
  }
}

/** The KeelStatus and KeelPendingApprovals a run was started with, as `report` keys them ('' when not both). */
function reportedAtStart(): string {
  const given = workflowInfo().typedSearchAttributes;
  const status = given.get(KeelStatus);
  const pending = given.get(KeelPendingApprovals);
  return typeof status === 'string' && typeof pending === 'number' ? `${status}|${pending}` : '';
}
