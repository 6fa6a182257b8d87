// The autonomy loop's plan: a DAG of tasks. Validation and "what may start now" live here,
// apart from the loop's states, because the goal workflow also validates a model's plan
// before feeding it in (and sends the errors back to the model).
import { z } from 'zod';
import { lazySchema } from './lazy-schema';

export const taskInputSchema = lazySchema(() => z.strictObject({
  id: z.string().min(1).max(64),
  title: z.string().min(1),
  instructions: z.string(),
  dependencies: z.array(z.string()).optional(),
  /** Higher runs first among ready tasks (default 0). */
  priority: z.number().int().optional(),
  /** The child agent's role (default `worker`). */
  role: z.string().optional(),
}));
export type TaskInput = z.infer<typeof taskInputSchema>;

export const taskSchema = lazySchema(() => z.strictObject({
  id: z.string().min(1),
  title: z.string(),
  instructions: z.string(),
  dependencies: z.array(z.string()),
  priority: z.number().int(),
  role: z.string(),
  status: z.enum(['pending', 'running', 'succeeded', 'failed', 'skipped', 'cancelled']),
  attempts: z.number().int().nonnegative(),
  /** Attempts this task may use; a human's `retry` raises it by one. */
  attemptLimit: z.number().int().positive(),
  result: z.string().nullable(),
  evidence: z.array(z.string()),
  /** The child agent of the current or last attempt. */
  agentId: z.string().nullable(),
}));
export type Task = z.infer<typeof taskSchema>;

export const MAX_PLAN_TASKS = 50;

/** Problems with a proposed plan (or follow-up tasks added to `existing`); empty if valid. */
export function planProblems(proposed: readonly TaskInput[], existing: readonly Task[] = [], max: number = MAX_PLAN_TASKS): string[] {
  const problems: string[] = [];
  if (proposed.length === 0) problems.push('the plan has no tasks');
  if (proposed.length + existing.length > max) problems.push(`a plan may hold at most ${max} tasks`);
  const ids = new Set(existing.map((t) => t.id));
  for (const task of proposed) {
    const parsed = taskInputSchema.safeParse(task);
    if (!parsed.success) problems.push(`task ${task.id}: ${parsed.error.issues.map((i) => i.message).join(', ')}`);
    if (ids.has(task.id)) problems.push(`task id ${task.id} is used twice`);
    ids.add(task.id);
  }
  for (const task of proposed) {
    for (const dep of task.dependencies ?? []) {
      if (!ids.has(dep)) problems.push(`task ${task.id} depends on unknown task ${dep}`);
      if (dep === task.id) problems.push(`task ${task.id} depends on itself`);
    }
  }
  const cycle = findCycle([...existing, ...proposed.map((t) => ({ id: t.id, dependencies: t.dependencies ?? [] }))]);
  if (cycle !== null) problems.push(`dependency cycle: ${cycle.join(' → ')}`);
  return problems;
}

function findCycle(tasks: readonly { id: string; dependencies: readonly string[] }[]): string[] | null {
  const deps = new Map(tasks.map((t) => [t.id, t.dependencies]));
  const state = new Map<string, 'visiting' | 'done'>();
  const path: string[] = [];
  const visit = (id: string): string[] | null => {
    if (state.get(id) === 'done') return null;
    if (state.get(id) === 'visiting') return [...path.slice(path.indexOf(id)), id];
    state.set(id, 'visiting');
    path.push(id);
    for (const dep of deps.get(id) ?? []) {
      if (dep === id) continue;
      const found = visit(dep);
      if (found !== null) return found;
    }
    path.pop();
    state.set(id, 'done');
    return null;
  };
  for (const t of tasks) {
    const found = visit(t.id);
    if (found !== null) return found;
  }
  return null;
}

export function toTask(t: TaskInput, attemptLimit: number): Task {
  return {
    id: t.id,
    title: t.title,
    instructions: t.instructions,
    dependencies: [...(t.dependencies ?? [])],
    priority: t.priority ?? 0,
    role: t.role ?? 'worker',
    status: 'pending',
    attempts: 0,
    attemptLimit,
    result: null,
    evidence: [],
    agentId: null,
  };
}

const satisfied = (t: Task | undefined): boolean => t !== undefined && (t.status === 'succeeded' || t.status === 'skipped');

/** Pending tasks whose dependencies are all done, highest priority first, plan order next. */
export function readyTasks(tasks: readonly Task[]): Task[] {
  const byId = new Map(tasks.map((t) => [t.id, t]));
  return tasks
    .map((t, index) => ({ t, index }))
    .filter(({ t }) => t.status === 'pending' && t.dependencies.every((d) => satisfied(byId.get(d))))
    .sort((a, b) => b.t.priority - a.t.priority || a.index - b.index)
    .map(({ t }) => t);
}

export const allDone = (tasks: readonly Task[]): boolean => tasks.every((t) => t.status === 'succeeded' || t.status === 'skipped');
