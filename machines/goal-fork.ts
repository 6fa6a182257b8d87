// Forking a goal (docs/fork-and-rewind.md "Goals"): a new goal that starts from one of its
// parent's points — a plan version, or the end of a finished task — with the parent's plan
// at that point or a changed one, the tasks done by then kept (their results, not run again)
// and the others run again, in a workspace laid out from the checkpoint taken at that point.
// Pure rules: which point a request names, what is kept, and every refusal with its reason.
// The goal records its points as it runs (workflows/goal-checkpoints.ts); the client picks
// from them (client/goal-fork.ts); the forked goal's machine takes the seed (`forked`).
import { z } from 'zod';
import { usageSchema, type Usage } from './budget';
import { lazySchema } from './lazy-schema';
import { planProblems, taskInputSchema, type Task, type TaskInput } from './task-graph';

/** Where a fork starts: a plan version (the workspace as it was when that version was made), or right after a task finished. */
export const goalForkPointSchema = lazySchema(() =>
  z.union([z.strictObject({ atPlanVersion: z.number().int().positive() }), z.strictObject({ afterTask: z.string().min(1).max(64) })]),
);
export type GoalForkPoint = z.infer<typeof goalForkPointSchema>;

/** A task done at the fork point: the fork keeps it as done, with what its agent (in the parent) reported. */
export const keptTaskSchema = lazySchema(() =>
  z.strictObject({
    taskId: z.string().min(1).max(64),
    attempt: z.number().int().nonnegative(),
    /** The parent's agent that did it (its conversation stays readable there). */
    agentId: z.string().nullable(),
    status: z.enum(['succeeded', 'skipped']),
    result: z.string().nullable(),
    evidence: z.array(z.string()).max(10_000),
    /** What it cost the parent (counted there, once: not again in the fork). */
    usage: usageSchema.nullable(),
  }),
);
export type KeptTask = z.infer<typeof keptTaskSchema>;

/** What a forked goal starts from (the machine's `forked` event takes all but the manifest). */
export interface GoalForkSeed {
  point: GoalForkPoint;
  /** The parent's plan version at the point. */
  fromPlanVersion: number;
  /** The fork's plan version: the parent's, or one more when the plan was changed. */
  planVersion: number;
  tasks: TaskInput[];
  kept: KeptTask[];
  /** The workspace checkpoint the fork's directory is laid out from. */
  manifest: string;
  /** The plan given differs from the parent's at the point. */
  changed: boolean;
}

/** A plan version as the goal recorded it when the version was made. */
export interface PlanVersionPoint {
  version: number;
  at: string;
  /** The plan then, with each task's status (a follow-up's version has the earlier tasks done). */
  tasks: Task[];
  /** The workspace then (null: its checkpoint failed, `error` says why). */
  manifest: string | null;
  error: string | null;
  /** How many task attempts had finished by then (`FinishedAttempt.seq` ≤ this). */
  finished: number;
}

/** One task attempt that ended, with the checkpoint its agent took at its end. */
export interface FinishedAttempt {
  /** 1, 2, …: the order attempts finished in. */
  seq: number;
  taskId: string;
  attempt: number;
  agentId: string;
  outcome: 'succeeded' | 'failed';
  /** The plan version in force when it finished. */
  planVersion: number;
  at: string;
  result: string | null;
  evidence: string[];
  usage: Usage;
  manifest: string | null;
  changed: number;
  removed: number;
  skipped: { path: string; reason: string }[];
  error: string | null;
}

/** What the rules read of a goal: its points and which tasks run now. */
export interface GoalForkRecord {
  enabled: boolean;
  planVersions: readonly PlanVersionPoint[];
  finished: readonly FinishedAttempt[];
  /** The goal's tasks now (a running one is no fork point). */
  tasks: readonly Pick<Task, 'id' | 'status'>[];
  maxTasks: number;
}

export type GoalForkRefusal = { code: 'checkpoints_off' | 'unknown_plan_version' | 'unknown_task' | 'task_running' | 'task_not_finished' | 'checkpoint_failed' | 'invalid_plan'; message: string };
export type GoalForkPlanned = { ok: true; seed: GoalForkSeed } | ({ ok: false } & GoalForkRefusal);

const refuse = (code: GoalForkRefusal['code'], message: string): GoalForkPlanned => ({ ok: false, code, message });

const asInput = (t: Task): TaskInput => ({ id: t.id, title: t.title, instructions: t.instructions, dependencies: [...t.dependencies], priority: t.priority, role: t.role });

const sameTask = (a: TaskInput, b: Task): boolean =>
  a.title === b.title && a.instructions === b.instructions && (a.role ?? 'worker') === b.role && JSON.stringify(a.dependencies ?? []) === JSON.stringify(b.dependencies);

/**
 * The seed of a fork of `record` at `point`, with `plan` (the fork's whole plan, checked as a
 * planner's is) or the parent's plan there. A task done at the point is kept when the fork's
 * plan names it unchanged (same title, instructions, role and dependencies); a task changed,
 * new or not done by then runs again.
 */
export function planGoalFork(record: GoalForkRecord, point: GoalForkPoint, plan?: readonly TaskInput[]): GoalForkPlanned {
  if (!record.enabled) return refuse('checkpoints_off', "this goal keeps no checkpoints, so its task agents' files cannot be restored (start it with checkpoints: true)");
  const versions = record.planVersions;
  const range = versions.length === 0 ? 'none yet' : `versions ${versions[0]!.version}–${versions.at(-1)!.version}`;
  let base: PlanVersionPoint;
  let manifest: string | null;
  let error: string | null;
  /** Tasks done at the point, by id, with what their last successful attempt reported. */
  const done = new Map<string, KeptTask>();
  if ('atPlanVersion' in point) {
    const found = versions.find((v) => v.version === point.atPlanVersion);
    if (found === undefined) return refuse('unknown_plan_version', `plan version ${point.atPlanVersion} does not exist in this goal (its plans: ${range})`);
    base = found;
    ({ manifest, error } = found);
    for (const t of found.tasks) {
      if (t.status !== 'succeeded' && t.status !== 'skipped') continue;
      const last = [...record.finished].reverse().find((f) => f.taskId === t.id && f.outcome === 'succeeded' && f.seq <= found.finished);
      done.set(t.id, { taskId: t.id, attempt: t.attempts, agentId: t.agentId, status: t.status, result: t.result, evidence: [...t.evidence], usage: last?.usage ?? null });
    }
  } else {
    const id = point.afterTask;
    const now = record.tasks.find((t) => t.id === id);
    const known = now !== undefined || versions.some((v) => v.tasks.some((t) => t.id === id));
    if (!known) return refuse('unknown_task', `task ${id} is not in this goal (its tasks: ${record.tasks.map((t) => t.id).join(', ') || 'none yet'})`);
    if (now?.status === 'running') return refuse('task_running', `task ${id} is running: a task is a fork point once it has finished (fork after a finished task, or at a plan version)`);
    const end = [...record.finished].reverse().find((f) => f.taskId === id);
    if (end === undefined) return refuse('task_not_finished', `task ${id} has not finished yet (${now?.status ?? 'not in the current plan'}): nothing to fork after`);
    const version = [...versions].reverse().find((v) => v.version <= end.planVersion);
    if (version === undefined) return refuse('unknown_plan_version', `task ${id} finished under plan version ${end.planVersion}, which this goal no longer holds (its plans: ${range})`);
    base = version;
    ({ manifest, error } = end);
    // Done when the version was made (a follow-up's earlier tasks), then what finished under it up to the point.
    for (const t of version.tasks) {
      if (t.status === 'succeeded' || t.status === 'skipped') done.set(t.id, { taskId: t.id, attempt: t.attempts, agentId: t.agentId, status: t.status, result: t.result, evidence: [...t.evidence], usage: null });
    }
    for (const f of record.finished) {
      if (f.seq > version.finished && f.seq <= end.seq && f.outcome === 'succeeded' && version.tasks.some((t) => t.id === f.taskId)) {
        done.set(f.taskId, { taskId: f.taskId, attempt: f.attempt, agentId: f.agentId, status: 'succeeded', result: f.result, evidence: [...f.evidence], usage: f.usage });
      }
    }
  }
  if (manifest === null) return refuse('checkpoint_failed', `the workspace's checkpoint at that point was not recorded: ${error ?? 'unknown error'}`);
  const tasks = plan !== undefined ? plan.map((t) => ({ ...t })) : base.tasks.map(asInput);
  if (plan !== undefined) {
    const problems = planProblems(tasks, [], record.maxTasks);
    if (problems.length > 0) return refuse('invalid_plan', `the fork's plan is not valid: ${problems.join('; ')}`);
  }
  const byId = new Map(base.tasks.map((t) => [t.id, t]));
  const kept = tasks.flatMap((t) => {
    const k = done.get(t.id);
    const was = byId.get(t.id);
    return k !== undefined && was !== undefined && sameTask(t, was) ? [k] : [];
  });
  const changed = plan !== undefined && (plan.length !== base.tasks.length || plan.some((t) => !byId.has(t.id) || !sameTask(t, byId.get(t.id)!)));
  return { ok: true, seed: { point, fromPlanVersion: base.version, planVersion: base.version + (changed ? 1 : 0), tasks, kept, manifest, changed } };
}

/** The plan a fork is started with, as its machine's `forked` event carries it (checked again there: input from outside). */
export const forkedPlanSchema = lazySchema(() => z.array(taskInputSchema).max(10_000));
