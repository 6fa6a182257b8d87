// One run of a Keel schedule as the SDK and the HTTP API show it: the schema alone, with no
// Temporal client beside it, so the console's page can take its type (server/console is
// type-checked for the browser, without Node's types).
import { z } from 'zod';

/** One run of a schedule, as the SDK and the HTTP API show it (server/schedule-schemas.ts answers with this schema). */
export const scheduleRunSchema = z.object({
  workflowId: z.string(),
  /** Temporal's execution status of the run's latest execution: RUNNING, COMPLETED, FAILED, … */
  execution: z.string(),
  startTime: z.string(),
  closeTime: z.string().nullable(),
  /** The goal's verdict (`goal_met`, `stopped`), once it ended with a report. */
  verdict: z.string().nullable(),
  /** Its summary, or why it stopped ("schedule budget spent: …"). */
  summary: z.string().nullable(),
  /** What it spent (so far, while it runs); null when not known (no report, or no answer). */
  costUsd: z.number().nullable(),
});
export type ScheduleRun = z.infer<typeof scheduleRunSchema>;
