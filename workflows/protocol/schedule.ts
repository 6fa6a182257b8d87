// A scheduled goal's protocol: when it runs (a cron line, an interval or calendar entries, in a
// time zone), what happens when a run is due while the last still runs (overlap), how late a
// missed run may still start (catch-up window), and what its runs may spend in a month. The
// zod schemas are the source; the SDK (client/schedules.ts), the CLI (client/cli/schedule.ts)
// and the HTTP API (server/schedule-routes.ts) take their types and their validation from here.
// The schedule itself is Temporal's (a Temporal Schedule starts each run): Keel keeps no timer.
// Plain schemas, not lazySchema's: no workflow imports this module (the goal's part is ./schedule-tag.ts).
import { Cron } from 'croner';
import { z } from 'zod';
import { scheduleIdSchema, WHEN_BUDGET_SPENT } from './schedule-tag';

export { scheduleIdSchema, WHEN_BUDGET_SPENT };

const DURATION = /^(\d{1,9})(ms|s|m|h|d)$/;
const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** A duration: milliseconds, or a number and a unit (`90s`, `5m`, `1h`, `2d`); parsed to milliseconds. */
export const durationSchema = z
  .union([
    z.number().int().positive().max(10 * 366 * 86_400_000, 'at most ten years'),
    z.string().regex(DURATION, 'a duration: a number and a unit (ms, s, m, h, d), e.g. 30s, 5m, 1h'),
  ])
  .transform((v) => {
    if (typeof v === 'number') return v;
    const [, n, unit] = DURATION.exec(v)!;
    return Number(n) * UNIT_MS[unit as keyof typeof UNIT_MS];
  });

/** Whether the runtime's time-zone database knows `zone` (Temporal's server checks it again with its own). */
export function isTimeZone(zone: string): boolean {
try {
  new Intl.DateTimeFormat('en-US', { timeZone: zone });
  return true;
} catch {
  return false;
}
}

/** An IANA time zone name (`Europe/Paris`, `UTC`). */
export const timeZoneSchema = z
  .string()
  .min(1)
  .max(100)
  .superRefine((zone, ctx) => {
    if (!isTimeZone(zone)) ctx.addIssue({ code: 'custom', message: `unknown time zone ${JSON.stringify(zone)}: an IANA name such as UTC, Europe/Paris or America/New_York` });
  });

const CRON_ALIASES = ['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly'];

/**
 * Why a cron line is refused, or null when it is a good one. Five fields (minute hour
 * day-of-month month day-of-week, names allowed) or an alias such as `@daily`: Temporal also
 * reads six and seven fields, but a six-field line means seconds first to most cron tools and
 * years last to Temporal, so Keel accepts only the form nobody reads two ways.
 */
export function cronProblem(line: string): string | null {
  const trimmed = line.trim();
  if (CRON_ALIASES.includes(trimmed.toLowerCase())) return null;
  const fields = trimmed.split(/\s+/);
  if (fields.length !== 5) return `cron ${JSON.stringify(line)}: five fields (minute hour day-of-month month day-of-week) or an alias such as @daily, not ${fields.length}`;
  try {
    // croner parses it with the same field rules (ranges, steps, names, `L`); `paused`: it never runs here.
    new Cron(trimmed, { paused: true });
    return null;
  } catch (error) {
    return `cron ${JSON.stringify(line)}: ${(error as Error).message.replace(/^CronPattern: /, '')}`;
  }
}

export const cronSchema = z
  .string()
  .max(200)
  .superRefine((line, ctx) => {
    const problem = cronProblem(line);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .transform((line) => line.trim());

/** One field of a calendar entry: `'*'`, a value, or a list of values and ranges. */
const calendarField = (name: string, min: number, max: number) => {
const value = z.number().int().min(min, `${name}: ${min} to ${max}`).max(max, `${name}: ${min} to ${max}`);
  const range = z
    // A step past the field's span means "start only"; Temporal keeps steps as 32-bit integers, and a larger one was a 500 (schemathesis).
    .strictObject({ start: value, end: value, step: z.number().int().positive().max(max - min + 1, `${name}: a step of at most ${max - min + 1}`).optional() })
    .refine((r) => r.end >= r.start, { message: `${name}: a range's end is not before its start` });
  return z.union([z.literal('*'), value, z.array(z.union([value, range])).min(1).max(60)]).optional();
};

/**
 * A calendar entry: every field is matched (Temporal's defaults for a field not given:
 * second, minute and hour 0; the others every value). `dayOfWeek` 0 is Sunday; `month` 1 is January.
 */
export const calendarEntrySchema = z.strictObject({
  second: calendarField('second', 0, 59),
  minute: calendarField('minute', 0, 59),
  hour: calendarField('hour', 0, 23),
  dayOfMonth: calendarField('dayOfMonth', 1, 31),
  month: calendarField('month', 1, 12),
  dayOfWeek: calendarField('dayOfWeek', 0, 6),
  // Temporal's SDK refuses a year outside 2000-2100 ("invalid calendar spec"): a 500 the fuzzer found.
  year: calendarField('year', 2000, 2100),
  comment: z.string().max(200).optional(),
});
export type CalendarEntry = z.output<typeof calendarEntrySchema>;

/** When the schedule runs its goal. */
export const whenSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('cron'), cron: cronSchema }),
  z.strictObject({
    kind: z.literal('interval'),
    /** Every this long, counted from the Unix epoch (plus `offset`), not from when the schedule was made. */
    every: durationSchema.refine((ms) => ms >= 1_000 && ms % 1_000 === 0, 'every: whole seconds, at least 1s'),
    offset: durationSchema.optional(),
  }),
  z.strictObject({ kind: z.literal('calendar'), at: z.array(calendarEntrySchema).min(1).max(20) }),
]);
export type ScheduleWhen = z.output<typeof whenSchema>;

/** A run is due while the last one still runs: skip it, keep one to start after it, cancel the running one, or run both. */
export const OVERLAP_POLICIES = ['skip', 'buffer_one', 'cancel_other', 'allow_all'] as const;
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];

/** Everything about when and how a schedule runs, and what its runs may spend. */
export const scheduleSpecSchema = z.strictObject({
  when: whenSchema,
  /** Cron lines and calendar entries are read in this zone, and a month of the budget begins at its midnight (default UTC). */
  timeZone: timeZoneSchema.default('UTC'),
  overlap: z.enum(OVERLAP_POLICIES).default('skip'),
  /** A run missed while the server was away still starts if it is at most this late (default 1h; Temporal's own default is a year). */
  catchupWindow: durationSchema.refine((ms) => ms >= 10_000, 'catchupWindow: at least 10s (Temporal\'s minimum)').default(3_600_000),
  /** What the schedule's runs may spend in a calendar month, in USD; a run that starts with it spent ends at once, calling no model (default: no monthly budget). */
  monthlyBudgetUsd: z.number().positive().max(1_000_000).optional(),
  whenBudgetSpent: z.enum(WHEN_BUDGET_SPENT).default('end_runs'),
});
export type ScheduleSpecInput = z.input<typeof scheduleSpecSchema>;
export type ScheduleSpec = z.output<typeof scheduleSpecSchema>;

/** A pause or resume: the note says why (it is shown with the schedule). */
export const scheduleNoteSchema = z.strictObject({ note: z.string().trim().min(1).max(2_000).optional() });

/** Runs for the times the schedule would have run between `from` and `to` (ISO 8601), e.g. after a pause. */
export const backfillSchema = z
  .strictObject({
    from: z.iso.datetime({ offset: true }),
    to: z.iso.datetime({ offset: true }),
    /** For these runs only (default the schedule's). */
    overlap: z.enum(OVERLAP_POLICIES).optional(),
  })
  .refine((b) => Date.parse(b.to) > Date.parse(b.from), { message: 'to must be after from', path: ['to'] });
export type BackfillInput = z.input<typeof backfillSchema>;

/** A trigger: run the goal now, whatever the spec says (the overlap policy still holds unless given). */
export const triggerSchema = z.strictObject({ overlap: z.enum(OVERLAP_POLICIES).optional() });

/**
 * A change to a schedule: each field given replaces the schedule's (a new `when` replaces the
 * whole spec's timing); `monthlyBudgetUsd: null` removes the monthly budget; `goal` is the text
 * of the runs that start from now on (runs already started keep theirs). At least one field.
 */
export const scheduleUpdateSchema = z
  .strictObject({
    when: whenSchema.optional(),
    timeZone: timeZoneSchema.optional(),
    overlap: z.enum(OVERLAP_POLICIES).optional(),
    catchupWindow: scheduleSpecSchema.shape.catchupWindow.unwrap().optional(),
    monthlyBudgetUsd: z.number().positive().max(1_000_000).nullable().optional(),
    whenBudgetSpent: z.enum(WHEN_BUDGET_SPENT).optional(),
    goal: z.string().trim().min(1, 'goal must not be empty').max(20_000).optional(),
  })
  .refine((u) => Object.values(u).some((v) => v !== undefined), { message: 'nothing to change: give at least one of when, timeZone, overlap, catchupWindow, monthlyBudgetUsd, whenBudgetSpent, goal' });
export type ScheduleUpdateInput = z.input<typeof scheduleUpdateSchema>;
