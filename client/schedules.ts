// Goals on a schedule (docs/schedules.md): each schedule is a Temporal Schedule whose action
// starts a normal goal workflow, tagged with its schedule (GoalOptions.schedule, the memo's
// keelSchedule, and the server's own TemporalScheduledById search attribute). Temporal keeps
// the time, the overlap policy and the catch-up window; Keel adds the goal, and a monthly
// budget each run checks before it calls a model (workflows/schedule-gate.ts).
import { randomUUID } from 'node:crypto';
import {
  type CalendarSpec,
  type Client,
  DAYS_OF_WEEK,
  type LooseRange,
  MONTHS,
  ScheduleAlreadyRunning,
  type ScheduleDescription,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  type ScheduleSpec as TemporalScheduleSpec,
  type ScheduleSummary,
} from '@temporalio/client';
import { scheduleBudgetDecision } from '../machines/schedule-budget';
import { monthWindow } from '../shared/month-window';
import { type ScheduleRun, scheduleRuns } from '../shared/schedule-runs';
import { describeIssues } from '../workflows/payloads';
import { goalWorkflow, type GoalOptions } from '../workflows/goal';
import { escapeMarkdown } from '../workflows/markdown';
import { stampedMemo, startSearchAttributes } from '../workflows/run-format';
import { KeelKind } from '../workflows/search-attributes';
import {
  backfillSchema,
  type BackfillInput,
  type CalendarEntry,
  type OverlapPolicy,
  scheduleIdSchema,
  scheduleSpecSchema,
  type ScheduleSpec,
  type ScheduleSpecInput,
  type ScheduleWhen,
  scheduleUpdateSchema,
  type ScheduleUpdateInput,
} from '../workflows/protocol/schedule';
import { InvalidInputError, KeelError, NotFoundError } from './errors';
import type { StartGoalOptions } from './keel-client';

export type { ScheduleRun };

/** What a schedule is made with: when (and how) it runs, and the goal each run pursues. */
export type CreateScheduleOptions = ScheduleSpecInput & {
  /** The schedule's id (default `schedule-<uuid>`); its runs are `<id>-<time>`. */
  id?: string;
  /** What each run is to achieve. */
  goal: string;
  /** The goal's options: workspace (must exist unless createWorkspace), policy, model, autoApprove, approval timeouts, a per-run budget… */
  goalOptions?: Omit<StartGoalOptions, 'id' | 'schedule'>;
  /** Created paused (it runs when resumed, or when triggered). */
  paused?: boolean;
  /** Shown with the schedule (e.g. why it is paused). */
  note?: string;
};

/** A schedule as Keel shows it. */
export interface ScheduleView {
  id: string;
  /** The goal's text on one line. */
  goal: string;
  workspace: string | null;
  spec: ScheduleSpec;
  paused: boolean;
  note: string | null;
  /** The next times it will run (ISO 8601), soonest first; none while paused. */
  nextRuns: string[];
  /** The runs it started last (at most 10, oldest first): when each was due, and its goal's workflow id. */
  recentRuns: { scheduledAt: string; startedAt: string; workflowId: string }[];
  /** Only from describe(): the server's counts. */
  actions?: { taken: number; skippedOverlap: number; missedCatchupWindow: number; running: string[] };
}

/** What the schedule's runs spent in a month of its time zone. */
export interface ScheduleSpend {
  month: string;
  spentUsd: number;
  budgetUsd: number | null;
  /** Runs whose cost is not known (no report: failed or terminated); counted as 0. */
  unknownRuns: number;
  /** Whether a run starting now would end at once. */
  spent: boolean;
}

export interface ScheduleDetails extends ScheduleView {
  spend: ScheduleSpend;
  /** This month's runs, newest first, each with its verdict and cost. */
  runs: ScheduleRun[];
}

/** No schedule with this id (in this namespace). */
export class NoScheduleError extends NotFoundError {
  constructor(
    readonly scheduleId: string,
    options?: { cause?: unknown },
  ) {
    super(scheduleId, options);
    this.message = `no schedule with id ${scheduleId}`;
  }
}

/** A schedule with this id exists already; nothing was created. */
export class ScheduleExistsError extends KeelError {
  constructor(readonly scheduleId: string) {
    super(`a schedule with id ${scheduleId} exists already (delete it first, or pick another id)`);
  }
}

/** The memo key a Keel schedule carries: its spec as Keel read it, and its goal's text. */
const MEMO_KEY = 'keelSchedule';
/**
 * A schedule's memo cannot be changed after it is made (Temporal's UpdateSchedule has no memo),
 * so an update writes the spec where it can: the memo of the workflows the schedule starts
 * (its action), which the view reads first. The schedule's memo keeps the spec it was made with.
 */
const ACTION_SPEC_KEY = 'keelScheduleSpec';
const OVERLAP: Record<OverlapPolicy, ScheduleOverlapPolicy> = {
  skip: ScheduleOverlapPolicy.SKIP,
  buffer_one: ScheduleOverlapPolicy.BUFFER_ONE,
  cancel_other: ScheduleOverlapPolicy.CANCEL_OTHER,
  allow_all: ScheduleOverlapPolicy.ALLOW_ALL,
};

interface ScheduleMemo {
  spec: ScheduleSpec;
  goal: string;
  workspace: string;
}

/** The goal's start input, as KeelClient makes it for startGoal (workspace resolved, options validated). */
export type GoalArgsMaker = (operation: string, goal: string, options: Omit<StartGoalOptions, 'id'>) => Promise<GoalOptions>;

export class KeelSchedules {
  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    private readonly goalArgs: GoalArgsMaker,
  ) {}

  /** Creates a schedule; refused with InvalidInputError (each problem named) before anything is made. */
  async create(options: CreateScheduleOptions): Promise<KeelSchedule> {
    const { id: requested, goal, goalOptions, paused, note, ...specInput } = options;
    const problems: string[] = [];
    const id = requested ?? `schedule-${randomUUID()}`;
    const idCheck = scheduleIdSchema.safeParse(id);
    if (!idCheck.success) problems.push(...describeIssues(idCheck.error.issues).map((p) => `id: ${p}`));
    const parsed = scheduleSpecSchema.safeParse(specInput);
    if (!parsed.success) problems.push(...describeIssues(parsed.error.issues));
    if (problems.length > 0 || !parsed.success) throw new InvalidInputError('createSchedule', problems);
    const spec = parsed.data;
    const args: GoalOptions = {
      ...(await this.goalArgs('createSchedule', goal, goalOptions ?? {})),
      schedule: { id, monthlyBudgetUsd: spec.monthlyBudgetUsd ?? null, timeZone: spec.timeZone, whenBudgetSpent: spec.whenBudgetSpent },
    };
    const summary = oneLine(goal, 180);
    const memo: ScheduleMemo = { spec, goal: summary, workspace: args.workspace };
    try {
      await this.client.schedule.create({
        scheduleId: id,
        spec: temporalSpec(spec),
        action: {
          type: 'startWorkflow',
          workflowType: goalWorkflow,
          // The server appends each run's due time: `<id>-2026-11-30T07:00:00Z`.
          workflowId: id,
          taskQueue: this.taskQueue,
          args: [args],
          staticSummary: `goal: ${escapeMarkdown(summary)} (schedule ${escapeMarkdown(id)})`,
          // As KeelClient.startGoal: the list shows what each goal is for; and which schedule started it.
          memo: stampedMemo({ keelSummary: summary, keelSchedule: id }),
          typedSearchAttributes: startSearchAttributes('goal', args.workspace),
        },
        policies: { overlap: OVERLAP[spec.overlap], catchupWindow: spec.catchupWindow, pauseOnFailure: false },
        memo: { [MEMO_KEY]: memo },
        typedSearchAttributes: [{ key: { name: KeelKind.name, type: KeelKind.type }, value: 'schedule' }],
        state: { ...(paused ? { paused: true } : {}), ...(note ? { note } : {}) },
      });
    } catch (error) {
      if (error instanceof ScheduleAlreadyRunning) throw new ScheduleExistsError(id);
      throw error;
    }
    return this.get(id);
  }

  get(id: string): KeelSchedule {
    return new KeelSchedule(this.client, id);
  }

  /** Keel's schedules (not other schedules of the namespace), each with its next and last runs. */
  async list(): Promise<ScheduleView[]> {
    const out: ScheduleView[] = [];
    // Each described: an updated schedule's spec is in its action (ACTION_SPEC_KEY), which a listing does not carry.
    for await (const s of this.client.schedule.list({ query: `${KeelKind.name} = 'schedule'` })) {
      if (!summaryView(s)) continue;
      const view = await this.get(s.scheduleId).describe().catch((error: unknown) => {
        if (error instanceof NoScheduleError) return null;
        throw error;
      });
      if (view) out.push(view);
    }
    return out.sort((a, b) => a.id.localeCompare(b.id));
  }
}

export class KeelSchedule {
  constructor(
    private readonly client: Client,
    readonly id: string,
  ) {}

  private get handle() {
    return this.client.schedule.getHandle(this.id);
  }

  private async call<T>(body: () => Promise<T>): Promise<T> {
    try {
      return await body();
    } catch (error) {
      if (error instanceof ScheduleNotFoundError) throw new NoScheduleError(this.id, { cause: error });
      throw error;
    }
  }

  /** The schedule: spec, state, next and recent runs, the server's counts of runs taken, skipped for overlap and missed. */
  async describe(): Promise<ScheduleView> {
    const d = await this.call(() => this.handle.describe());
    const view = descriptionView(d);
    if (!view) throw new NoScheduleError(this.id);
    return view;
  }

  /** describe() with this month's runs (verdict, cost) and their spend against the monthly budget. */
  async details(at: Date = new Date()): Promise<ScheduleDetails> {
    const view = await this.describe();
    const window = monthWindow(at, view.spec.timeZone);
    const runs = await scheduleRuns(this.client, this.id, { since: window.start });
    const d = scheduleBudgetDecision({ budgetUsd: view.spec.monthlyBudgetUsd ?? null, runs, month: window.month, whenBudgetSpent: view.spec.whenBudgetSpent });
    return { ...view, runs, spend: { month: d.month, spentUsd: d.spentUsd, budgetUsd: d.budgetUsd, unknownRuns: d.unknownRuns, spent: d.decision === 'spent' } };
  }

  /** Every run of the schedule (or those started since `since`), newest first, with verdict and cost. */
  runs(options: { since?: Date; limit?: number } = {}): Promise<ScheduleRun[]> {
    return scheduleRuns(this.client, this.id, options);
  }

  /** No more runs until resumed; the note says why (shown with the schedule). */
  pause(note?: string): Promise<void> {
    return this.call(() => this.handle.pause(note ?? 'paused with keel'));
  }

  resume(note?: string): Promise<void> {
    return this.call(() => this.handle.unpause(note ?? 'resumed with keel'));
  }

  /** One run now, whatever the spec says; the overlap policy still holds unless another is given. */
  trigger(overlap?: OverlapPolicy): Promise<void> {
    return this.call(() => this.handle.trigger(overlap ? OVERLAP[overlap] : undefined));
  }

  /** Runs for the times the spec names between `from` and `to`, as if the schedule had run then. */
  backfill(range: BackfillInput): Promise<void> {
    const r = backfillSchema.safeParse(range);
    if (!r.success) throw new InvalidInputError('backfill', describeIssues(r.error.issues));
    return this.call(() => this.handle.backfill({ start: new Date(r.data.from), end: new Date(r.data.to), ...(r.data.overlap ? { overlap: OVERLAP[r.data.overlap] } : {}) }));
  }

  /**
   * Changes when and how it runs, its monthly budget or its goal's text; runs already started
   * keep what they started with. Refused with InvalidInputError (each problem named) before
   * anything changes. Answers the schedule as it is after the change.
   */
  async update(changes: ScheduleUpdateInput): Promise<ScheduleView> {
    const parsed = scheduleUpdateSchema.safeParse(changes);
    if (!parsed.success) throw new InvalidInputError('updateSchedule', describeIssues(parsed.error.issues));
    const { goal, monthlyBudgetUsd, ...rest } = parsed.data;
    await this.call(() =>
      this.handle.update((previous) => {
        const current = currentSpec(previous);
        if (!current) throw new NoScheduleError(this.id);
        const merged = scheduleSpecSchema.safeParse({
          ...current.spec,
          ...Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined)),
          ...(monthlyBudgetUsd === null ? { monthlyBudgetUsd: undefined } : monthlyBudgetUsd !== undefined ? { monthlyBudgetUsd } : {}),
        });
        if (!merged.success) throw new InvalidInputError('updateSchedule', describeIssues(merged.error.issues));
        const spec = merged.data;
        const [args] = previous.action.args as [GoalOptions];
        const summary = goal !== undefined ? oneLine(goal, 180) : current.goal;
        const nextArgs: GoalOptions = {
          ...args,
          ...(goal !== undefined ? { goal } : {}),
          schedule: { id: this.id, monthlyBudgetUsd: spec.monthlyBudgetUsd ?? null, timeZone: spec.timeZone, whenBudgetSpent: spec.whenBudgetSpent },
        };
        return {
          spec: temporalSpec(spec),
          action: {
            ...previous.action,
            args: [nextArgs],
            staticSummary: `goal: ${escapeMarkdown(summary)} (schedule ${escapeMarkdown(this.id)})`,
            memo: { ...previous.action.memo, keelSummary: summary, [ACTION_SPEC_KEY]: spec },
          },
          policies: { ...previous.policies, overlap: OVERLAP[spec.overlap], catchupWindow: spec.catchupWindow },
          state: { paused: previous.state.paused, ...(previous.state.note ? { note: previous.state.note } : {}), ...(previous.state.remainingActions !== undefined ? { remainingActions: previous.state.remainingActions } : {}) },
        };
      }),
    );
    return this.describe();
  }

  /** Deletes the schedule; its runs (running or finished) are left as they are. */
  delete(): Promise<void> {
    return this.call(() => this.handle.delete());
  }
}

// ---- Keel's spec → Temporal's -------------------------------------------------------------------

function temporalSpec(spec: ScheduleSpec): TemporalScheduleSpec {
  const base = { timezone: spec.timeZone };
  return { ...base, ...specOf(spec.when) };
}

function specOf(when: ScheduleWhen): Omit<TemporalScheduleSpec, 'timezone'> {
  switch (when.kind) {
    case 'cron':
      return { cronExpressions: [when.cron] };
    case 'interval':
      return { intervals: [{ every: when.every, ...(when.offset !== undefined ? { offset: when.offset } : {}) }] };
    case 'calendar':
      return { calendars: when.at.map(calendarOf) };
    default: {
      const never: never = when;
      throw new Error(`unknown schedule kind ${JSON.stringify(never)}`);
    }
  }
}

type Field = CalendarEntry['minute'];
function field<U>(f: Field, name: (n: number) => U): LooseRange<U> | LooseRange<U>[] | '*' | undefined {
  if (f === undefined || f === '*') return f;
  if (typeof f === 'number') return name(f);
  return f.map((v) => (typeof v === 'number' ? name(v) : { start: name(v.start), end: name(v.end), step: v.step ?? 1 }));
}

function calendarOf(entry: CalendarEntry): CalendarSpec {
  const same = (n: number) => n;
  const out: CalendarSpec = {};
  const set = <K extends keyof CalendarSpec>(key: K, value: CalendarSpec[K] | undefined) => {
    if (value !== undefined) out[key] = value;
  };
  set('second', field(entry.second, same));
  set('minute', field(entry.minute, same));
  set('hour', field(entry.hour, same));
  set('dayOfMonth', field(entry.dayOfMonth, same));
  set('month', field(entry.month, (n) => MONTHS[n - 1]!));
  set('dayOfWeek', field(entry.dayOfWeek, (n) => DAYS_OF_WEEK[n]!));
  set('year', field(entry.year, same));
  if (entry.comment !== undefined) out.comment = entry.comment;
  return out;
}

// ---- Temporal's description → Keel's view ------------------------------------------------------

function memoOf(memo: Record<string, unknown> | undefined): ScheduleMemo | null {
  const m = memo?.[MEMO_KEY];
  if (typeof m !== 'object' || m === null) return null;
  const spec = scheduleSpecSchema.safeParse((m as { spec?: unknown }).spec);
  if (!spec.success) return null;
  const { goal, workspace } = m as { goal?: unknown; workspace?: unknown };
  return { spec: spec.data, goal: typeof goal === 'string' ? goal : '', workspace: typeof workspace === 'string' ? workspace : '' };
}

function baseView(id: string, memo: ScheduleMemo, state: { paused: boolean; note?: string | undefined }, info: ScheduleSummary['info']): ScheduleView {
  return {
    id,
    goal: memo.goal,
    workspace: memo.workspace || null,
    spec: memo.spec,
    paused: state.paused,
    note: state.note || null,
    nextRuns: info.nextActionTimes.map((t) => t.toISOString()),
    recentRuns: info.recentActions.map((a) => ({ scheduledAt: a.scheduledAt.toISOString(), startedAt: a.takenAt.toISOString(), workflowId: a.action.workflow.workflowId })),
  };
}

function summaryView(s: ScheduleSummary): ScheduleView | null {
  const memo = memoOf(s.memo);
  return memo ? baseView(s.scheduleId, memo, s.state, s.info) : null;
}

/** The spec and goal text as they are now: an update's (in the action's memo) over the schedule's own memo. */
function currentSpec(d: ScheduleDescription): ScheduleMemo | null {
  const memo = memoOf(d.memo);
  if (!memo) return null;
  const updated = scheduleSpecSchema.safeParse(d.action.memo?.[ACTION_SPEC_KEY]);
  const summary = d.action.memo?.keelSummary;
  return { ...memo, ...(updated.success ? { spec: updated.data } : {}), ...(typeof summary === 'string' ? { goal: summary } : {}) };
}

function descriptionView(d: ScheduleDescription): ScheduleView | null {
  const memo = currentSpec(d);
  if (!memo) return null;
  return {
    ...baseView(d.scheduleId, memo, d.state, d.info),
    actions: {
      taken: d.info.numActionsTaken,
      skippedOverlap: d.info.numActionsSkippedOverlap,
      missedCatchupWindow: d.info.numActionsMissedCatchupWindow,
      running: d.info.runningActions.map((a) => a.workflow.workflowId),
    },
  };
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
