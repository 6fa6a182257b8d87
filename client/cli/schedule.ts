// `keel schedule …`: goals on a schedule (client/schedules.ts, docs/schedules.md). Every
// subcommand takes --json (one JSON line); a schedule that does not exist exits 4, bad
// arguments 2 with each problem named.
import type { Command } from 'commander';
import { usd } from '../../machines/schedule-budget';
import { InvalidInputError } from '../errors';
import type { CreateScheduleOptions, ScheduleDetails, ScheduleView } from '../schedules';
import type { ScheduleUpdateInput } from '../../workflows/protocol/schedule';
import type { ScheduleWhen } from '../../workflows/protocol/schedule';
import { OVERLAP_POLICIES, type OverlapPolicy } from '../../workflows/protocol/schedule';
import { CliExit, withClient } from './common';
import { EXIT, type Output, table } from './output';

interface CreateOptions {
  goal: string;
  id?: string;
  cron?: string;
  every?: string;
  offset?: string;
  calendar?: string;
  tz?: string;
  overlap?: string;
  catchup?: string;
  budgetUsd?: string;
  whenSpent?: string;
  runBudgetUsd?: string;
  workspace?: string;
  autoApprove?: boolean;
  mode?: string;
  model?: string;
  approvalTimeout?: string;
  planApprovalTimeout?: string;
  paused?: boolean;
  note?: string;
  json?: boolean;
}

const MODES = ['read-only', 'ask', 'auto-edit', 'full-auto'] as const;

function positiveNumber(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!(n > 0) || !Number.isFinite(n)) throw new CliExit(EXIT.usage, `${flag} must be a positive number`);
  return n;
}

function overlapOf(value: string | undefined): OverlapPolicy | undefined {
  if (value === undefined) return undefined;
  if (!(OVERLAP_POLICIES as readonly string[]).includes(value)) throw new CliExit(EXIT.usage, `--overlap must be one of ${OVERLAP_POLICIES.join(', ')}`);
  return value as OverlapPolicy;
}

/** Exactly one of --cron, --every, --calendar (for an update: at most one); the schema checks what each holds. */
function whenOf(o: Pick<CreateOptions, 'cron' | 'every' | 'offset' | 'calendar'>, optional = false): unknown {
  const given = [o.cron !== undefined, o.every !== undefined, o.calendar !== undefined].filter(Boolean).length;
  if (optional && given === 0) return undefined;
  if (given !== 1) throw new CliExit(EXIT.usage, 'give one of --cron "<5 fields>", --every <duration> or --calendar \'<JSON entries>\'');
  if (o.cron !== undefined) return { kind: 'cron', cron: o.cron };
  if (o.every !== undefined) return { kind: 'interval', every: o.every, ...(o.offset !== undefined ? { offset: o.offset } : {}) };
  let at: unknown;
  try {
    at = JSON.parse(o.calendar!);
  } catch {
    throw new CliExit(EXIT.usage, '--calendar must be JSON: an entry or a list of entries, e.g. \'{"hour":7,"dayOfWeek":[{"start":1,"end":5}]}\'');
  }
  return { kind: 'calendar', at: Array.isArray(at) ? at : [at] };
}

/** A duration flag as milliseconds (the schema's `30s`, `5m`, `1h` forms). */
function msOf(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const m = /^(\d+)(s|m|h|d)$/.exec(value);
  if (!m) throw new CliExit(EXIT.usage, `${flag}: a duration such as 30s, 10m, 2h, 1d`);
  return Number(m[1]) * { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 's' | 'm' | 'h' | 'd'];
}

function createInput(o: CreateOptions): CreateScheduleOptions {
  if (o.mode !== undefined && !(MODES as readonly string[]).includes(o.mode)) throw new CliExit(EXIT.usage, `--mode must be one of ${MODES.join(', ')}`);
  const runBudget = positiveNumber('--run-budget-usd', o.runBudgetUsd);
  const monthly = positiveNumber('--budget-usd', o.budgetUsd);
  const approvalTimeoutMs = msOf('--approval-timeout', o.approvalTimeout);
  const planApprovalTimeoutMs = msOf('--plan-approval-timeout', o.planApprovalTimeout);
  const overlap = overlapOf(o.overlap);
  return {
    ...(o.id !== undefined ? { id: o.id } : {}),
    goal: o.goal,
    when: whenOf(o) as ScheduleWhen,
    ...(o.tz !== undefined ? { timeZone: o.tz } : {}),
    ...(overlap ? { overlap } : {}),
    ...(o.catchup !== undefined ? { catchupWindow: o.catchup } : {}),
    ...(monthly !== undefined ? { monthlyBudgetUsd: monthly } : {}),
    ...(o.whenSpent !== undefined ? { whenBudgetSpent: o.whenSpent as 'end_runs' } : {}),
    ...(o.paused ? { paused: true } : {}),
    ...(o.note !== undefined ? { note: o.note } : {}),
    goalOptions: {
      ...(o.workspace !== undefined ? { workspace: o.workspace } : {}),
      ...(o.autoApprove ? { autoApprove: true } : {}),
      ...(o.mode !== undefined ? { policy: { mode: o.mode as (typeof MODES)[number] } } : {}),
      ...(o.model !== undefined ? { model: o.model } : {}),
      ...(runBudget !== undefined ? { limits: { costUsd: runBudget } } : {}),
      ...(approvalTimeoutMs !== undefined ? { approvalTimeoutMs } : {}),
      ...(planApprovalTimeoutMs !== undefined ? { planApprovalTimeoutMs } : {}),
    },
  };
}

/** An InvalidInputError is the caller's mistake: exit 2 with each problem. */
async function usage<T>(body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (error) {
    if (error instanceof InvalidInputError) throw new CliExit(EXIT.usage, error.message);
    throw error;
  }
}

export function whenText(v: ScheduleView): string {
  const w = v.spec.when;
  switch (w.kind) {
    case 'cron':
      return `cron "${w.cron}" ${v.spec.timeZone}`;
    case 'interval':
      return `every ${seconds(w.every)}${w.offset ? ` +${seconds(w.offset)}` : ''}`;
    case 'calendar':
      return `calendar ×${w.at.length} ${v.spec.timeZone}`;
    default: {
      const never: never = w;
      return String(never);
    }
  }
}

const seconds = (ms: number) => (ms % 86_400_000 === 0 ? `${ms / 86_400_000}d` : ms % 3_600_000 === 0 ? `${ms / 3_600_000}h` : ms % 60_000 === 0 ? `${ms / 60_000}m` : `${ms / 1000}s`);
const spendText = (d: ScheduleDetails) => `${usd(d.spend.spentUsd)}${d.spend.budgetUsd !== null ? ` of ${usd(d.spend.budgetUsd)}` : ''} in ${d.spend.month}${d.spend.spent ? ' (spent)' : ''}`;

function showLines(out: Output, d: ScheduleDetails): void {
  out.line(`${out.bold(d.id)}  ${d.paused ? out.yellow('paused') : out.green('active')}${d.note ? `  (${d.note})` : ''}`);
  out.line(`goal:      ${d.goal}`);
  out.line(`workspace: ${d.workspace ?? '-'}`);
  out.line(`when:      ${whenText(d)}; overlap ${d.spec.overlap}; catch-up ${seconds(d.spec.catchupWindow)}`);
  out.line(`spend:     ${spendText(d)}${d.spend.unknownRuns > 0 ? `, ${d.spend.unknownRuns} run(s) of unknown cost` : ''}; when spent: ${d.spec.whenBudgetSpent}`);
  out.line(`next:      ${d.nextRuns.slice(0, 3).join(', ') || '-'}`);
  if (d.actions) out.line(`actions:   ${d.actions.taken} started, ${d.actions.skippedOverlap} skipped (overlap), ${d.actions.missedCatchupWindow} missed (catch-up), ${d.actions.running.length} running`);
  if (d.runs.length === 0) return out.line('runs:      none this month');
  out.line('runs this month:');
  for (const l of table([['started', 'workflow', 'state', 'cost', 'outcome'], ...d.runs.slice(0, 20).map((r) => [r.startTime, r.workflowId, r.verdict ?? r.execution.toLowerCase(), r.costUsd === null ? '?' : usd(r.costUsd), r.summary ?? ''])])) out.line(`  ${l}`);
}

export function registerScheduleCommands(program: Command): void {
  const schedule = program.command('schedule').description('goals on a schedule (Temporal Schedules): create, list, show, update, pause, resume, trigger, backfill, delete');

  schedule
    .command('create')
    .description('a schedule that starts a goal: --cron "0 7 * * 1-5", --every 1h or --calendar JSON, in --tz')
    .requiredOption('--goal <text>', 'what each run is to achieve')
    .option('--id <id>', 'schedule id (default schedule-<uuid>)')
    .option('--cron <line>', 'five fields: minute hour day-of-month month day-of-week (or @daily, @hourly…)')
    .option('--every <duration>', 'an interval: 30s, 15m, 1h, 1d')
    .option('--offset <duration>', 'with --every: shifted by this much')
    .option('--calendar <json>', 'calendar entries as JSON, e.g. \'{"hour":7,"dayOfWeek":[{"start":1,"end":5}]}\'')
    .option('--tz <zone>', 'time zone of --cron and --calendar, and of the budget\'s months (default UTC)')
    .option('--overlap <policy>', `a run due while the last still runs: ${OVERLAP_POLICIES.join(' | ')} (default skip)`)
    .option('--catchup <duration>', 'a run missed while the server was away still starts if at most this late (default 1h)')
    .option('--budget-usd <n>', "what the schedule's runs may spend in a month; then runs end at once")
    .option('--when-spent <what>', 'end_runs (default: runs end at once until next month) | pause (also pause the schedule with a note)')
    .option('--run-budget-usd <n>', "each run's own budget")
    .option('--workspace <dir>', 'directory the agents work in (default: the current one)')
    .option('--auto-approve', 'runs execute their plan without asking')
    .option('--mode <mode>', 'tool policy: read-only | ask | auto-edit | full-auto')
    .option('--model <name>', 'model of the planner, critic and agents')
    .option('--approval-timeout <duration>', 'how long a tool call waits for a human before it times out (default: forever)')
    .option('--plan-approval-timeout <duration>', 'how long a plan waits for approval before the run stops (default: forever)')
    .option('--paused', 'create it paused')
    .option('--note <text>', 'a note shown with the schedule')
    .option('--json')
    .action((o: CreateOptions) =>
      withClient(o.json, async (keel, out) => {
        const s = await usage(() => keel.schedules.create(createInput(o)));
        const view = await s.describe();
        if (out.json) return out.emit(view);
        out.line(`schedule ${view.id}: ${whenText(view)}; next ${view.nextRuns[0] ?? '-'}`);
      }),
    );

  schedule
    .command('list')
    .description("Keel's schedules: next run, last run, this month's spend")
    .option('--json')
    .action((o: { json?: boolean }) =>
      withClient(o.json, async (keel, out) => {
        const views = await keel.schedules.list();
        const details = await Promise.all(views.map((v) => keel.schedules.get(v.id).details()));
        if (out.json) return out.emit({ items: details });
        if (details.length === 0) return out.line('no schedules');
        for (const l of table([
          ['id', 'state', 'when', 'next run', 'last run', 'spend', 'goal'],
          ...details.map((d) => [d.id, d.paused ? 'paused' : 'active', whenText(d), d.nextRuns[0] ?? '-', d.recentRuns.at(-1)?.startedAt ?? '-', spendText(d), d.goal]),
        ]))
          out.line(l);
      }),
    );

  schedule
    .command('show')
    .description("a schedule: spec, state and note, next runs, the server's counts (started, skipped for overlap, missed), this month's runs and spend")
    .argument('<id>')
    .option('--json')
    .action((id: string, o: { json?: boolean }) =>
      withClient(o.json, async (keel, out) => {
        const d = await keel.schedules.get(id).details();
        if (out.json) return out.emit(d);
        showLines(out, d);
      }),
    );

  for (const op of ['pause', 'resume'] as const) {
    schedule
      .command(op)
      .description(op === 'pause' ? 'no more runs until resumed (the note says why)' : 'runs again as its spec says')
      .argument('<id>')
      .option('--note <text>')
      .option('--json')
      .action((id: string, o: { note?: string; json?: boolean }) =>
        withClient(o.json, async (keel, out) => {
          await keel.schedules.get(id)[op](o.note);
          if (out.json) return out.emit({ id, paused: op === 'pause' });
          out.line(`schedule ${id} ${op === 'pause' ? 'paused' : 'resumed'}`);
        }),
      );
  }

  schedule
    .command('trigger')
    .description('run the goal now (the overlap policy holds unless --overlap)')
    .argument('<id>')
    .option('--overlap <policy>', OVERLAP_POLICIES.join(' | '))
    .option('--json')
    .action((id: string, o: { overlap?: string; json?: boolean }) =>
      withClient(o.json, async (keel, out) => {
        await keel.schedules.get(id).trigger(overlapOf(o.overlap));
        if (out.json) return out.emit({ id, triggered: true });
        out.line(`schedule ${id} triggered`);
      }),
    );

  schedule
    .command('backfill')
    .description('runs for the times the spec names between --from and --to (ISO 8601), as if it had run then')
    .argument('<id>')
    .requiredOption('--from <time>', 'e.g. 2026-11-01T00:00:00Z')
    .requiredOption('--to <time>')
    .option('--overlap <policy>', `for these runs (default the schedule's): ${OVERLAP_POLICIES.join(' | ')}`)
    .option('--json')
    .action((id: string, o: { from: string; to: string; overlap?: string; json?: boolean }) =>
      withClient(o.json, async (keel, out) => {
        const overlap = overlapOf(o.overlap);
        await usage(() => keel.schedules.get(id).backfill({ from: o.from, to: o.to, ...(overlap ? { overlap } : {}) }));
        if (out.json) return out.emit({ id, backfilled: { from: o.from, to: o.to } });
        out.line(`schedule ${id}: backfill from ${o.from} to ${o.to} requested`);
      }),
    );

  schedule
    .command('update')
    .description("change a schedule's timing, overlap, catch-up, monthly budget or goal text; runs already started keep theirs")
    .argument('<id>')
    .option('--cron <line>', 'new timing: five fields (or @daily, @hourly…)')
    .option('--every <duration>', 'new timing: an interval (30s, 15m, 1h, 1d)')
    .option('--offset <duration>', 'with --every: shifted by this much')
    .option('--calendar <json>', 'new timing: calendar entries as JSON')
    .option('--tz <zone>', 'time zone')
    .option('--overlap <policy>', OVERLAP_POLICIES.join(' | '))
    .option('--catchup <duration>', 'catch-up window')
    .option('--budget-usd <n>', 'monthly budget in USD, or "none" to remove it')
    .option('--when-spent <what>', 'end_runs | pause')
    .option('--goal <text>', "the goal's text for the runs from now on")
    .option('--json')
    .action((id: string, o: Omit<CreateOptions, 'goal'> & { goal?: string }) =>
      withClient(o.json, async (keel, out) => {
        const overlap = overlapOf(o.overlap);
        const when = whenOf(o, true);
        const budget = o.budgetUsd === 'none' ? null : positiveNumber('--budget-usd', o.budgetUsd);
        const changes = {
          ...(when !== undefined ? { when: when as ScheduleWhen } : {}),
          ...(o.tz !== undefined ? { timeZone: o.tz } : {}),
          ...(overlap ? { overlap } : {}),
          ...(o.catchup !== undefined ? { catchupWindow: o.catchup } : {}),
          ...(budget !== undefined ? { monthlyBudgetUsd: budget } : {}),
          ...(o.whenSpent !== undefined ? { whenBudgetSpent: o.whenSpent as 'end_runs' } : {}),
          ...(o.goal !== undefined ? { goal: o.goal } : {}),
        } satisfies ScheduleUpdateInput;
        const view = await usage(() => keel.schedules.get(id).update(changes));
        if (out.json) return out.emit(view);
        out.line(`schedule ${view.id} updated: ${whenText(view)}; overlap ${view.spec.overlap}; next ${view.nextRuns[0] ?? '-'}`);
      }),
    );

  schedule
    .command('delete')
    .description('delete the schedule (its runs are left as they are)')
    .argument('<id>')
    .option('--json')
    .action((id: string, o: { json?: boolean }) =>
      withClient(o.json, async (keel, out) => {
        await keel.schedules.get(id).delete();
        if (out.json) return out.emit({ id, deleted: true });
        out.line(`schedule ${id} deleted`);
      }),
    );
}
