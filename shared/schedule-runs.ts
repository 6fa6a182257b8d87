// The runs a Keel schedule started, with what each spent: read from Temporal, not kept by Keel.
// The server tags every workflow a schedule starts (scheduled, triggered or backfilled) with
// the TemporalScheduledById search attribute, so the runs are a visibility query; a finished
// goal's cost is in its report (its result), a running goal's in its `usage` query. Used by the
// monthly-budget check of each run (activities/schedule-budget.ts) and by the SDK's view of a
// schedule (client/schedules.ts).
import type { Client } from '@temporalio/client';
import { z } from 'zod';
import { scheduleRunSchema, type ScheduleRun } from './schedule-run';

export { scheduleRunSchema, type ScheduleRun };

export interface ScheduleRunsOptions {
  /** Only runs started at or after this instant. */
  since?: Date;
  /** Leave out this workflow (the run asking about the others). */
  exclude?: string;
  /** At most this many, newest first (default 1000). */
  limit?: number;
  /** How long a running goal's `usage` query may take before its cost counts as unknown (default 5 s). */
  queryTimeoutMs?: number;
}

const quote = (v: string) => `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

// What is read of a goal's report and of its usage view (workflows/goal-options.ts GoalResult,
// workflows/protocol/goal.ts GoalUsageView): checked here, as anything read back from outside.
const reportSchema = z.object({ verdict: z.string(), summary: z.string().nullable().optional(), cost: z.number() });
const usageSchema = z.object({ usage: z.object({ costUsd: z.number() }) });

/** The visibility query for the runs of a schedule (started at or after `since`). */
export function scheduleRunsQuery(scheduleId: string, since?: Date): string {
  return [`TemporalScheduledById = ${quote(scheduleId)}`, ...(since ? [`StartTime >= ${quote(since.toISOString())}`] : [])].join(' AND ');
}

export async function scheduleRuns(client: Client, scheduleId: string, options: ScheduleRunsOptions = {}): Promise<ScheduleRun[]> {
  const limit = options.limit ?? 1000;
  // Newest first; a goal that continued as new is one run (its latest execution answers for the chain: its report carries the whole usage).
  const ids: string[] = [];
  for await (const info of client.workflow.list({ query: scheduleRunsQuery(scheduleId, options.since) })) {
    if (info.workflowId === options.exclude || ids.includes(info.workflowId)) continue;
    ids.push(info.workflowId);
    if (ids.length >= limit) break;
  }
  return Promise.all(ids.map((id) => runOf(client, id, options.queryTimeoutMs ?? 5_000)));
}

async function runOf(client: Client, workflowId: string, queryTimeoutMs: number): Promise<ScheduleRun> {
  const handle = client.workflow.getHandle(workflowId);
  const d = await handle.describe();
  const run: ScheduleRun = {
    workflowId,
    execution: d.status.name,
    startTime: d.startTime.toISOString(),
    closeTime: d.closeTime ? d.closeTime.toISOString() : null,
    verdict: null,
    summary: null,
    costUsd: null,
  };
  if (d.status.name === 'COMPLETED') {
    const report = reportSchema.safeParse(await handle.result().catch(() => null));
    if (report.success) return { ...run, verdict: report.data.verdict, summary: report.data.summary ?? null, costUsd: report.data.cost };
    return run;
  }
  if (d.status.name === 'RUNNING') {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), queryTimeoutMs)));
    // By name: shared/ does not import the workflows' protocol (the README's layering rule 2).
    const usage = usageSchema.safeParse(await Promise.race([handle.query('usage').catch(() => null), timeout]).finally(() => clearTimeout(timer)));
    if (usage.success) return { ...run, costUsd: usage.data.usage.costUsd };
  }
  return run;
}
