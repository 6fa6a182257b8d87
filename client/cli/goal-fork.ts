// `keel goal fork ID --at-plan N | --after-task T [--plan-file F]`: a goal fork from the
// command line (docs/fork-and-rewind.md "Goals"). The plan file is the fork's whole plan, a
// JSON array of tasks as a planner proposes them (or `{ "tasks": [...] }`, what
// `keel status ID --json` shows as `plan`), checked as a planner's is.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { TaskInput } from '../../machines/task-graph';
import { CheckpointError } from '../checkpoints';
import { CliExit, withClient } from './common';
import { EXIT } from './output';

export interface GoalForkCommandOptions {
  atPlan?: string;
  afterTask?: string;
  planFile?: string;
  workspace?: string;
  id?: string;
  json?: boolean;
}

/** The plan file's tasks: an array, or an object with `tasks` (a plan view), each task's own fields only. */
async function planFrom(file: string): Promise<TaskInput[]> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(path.resolve(file), 'utf8'));
  } catch (error) {
    throw new CliExit(EXIT.usage, `--plan-file ${file}: ${(error as Error).message}`);
  }
  const tasks = Array.isArray(raw) ? raw : (raw as { tasks?: unknown } | null)?.tasks;
  if (!Array.isArray(tasks)) throw new CliExit(EXIT.usage, `--plan-file ${file}: a JSON array of tasks (or an object with "tasks")`);
  // A plan view's tasks carry their state (status, attempts, result…): the fork takes what a planner proposes.
  return tasks.map((t: Record<string, unknown>) => Object.fromEntries(Object.entries(t).filter(([k]) => ['id', 'title', 'instructions', 'dependencies', 'priority', 'role'].includes(k))) as TaskInput);
}

export function goalForkCommand(id: string, o: GoalForkCommandOptions): Promise<void> {
  return withClient(o.json, async (keel, out) => {
    if ((o.atPlan === undefined) === (o.afterTask === undefined)) throw new CliExit(EXIT.usage, 'name the fork point: --at-plan N (a plan version) or --after-task T (a finished task)');
    if (o.atPlan !== undefined && !/^[1-9]\d*$/.test(o.atPlan)) throw new CliExit(EXIT.usage, `--at-plan: a plan version (1, 2, …), not ${JSON.stringify(o.atPlan)}`);
    const plan = o.planFile !== undefined ? await planFrom(o.planFile) : undefined;
    const fork = await keel
      .forkGoal(id, {
        ...(o.atPlan !== undefined ? { atPlanVersion: Number(o.atPlan) } : { afterTask: o.afterTask! }),
        ...(plan !== undefined ? { plan } : {}),
        ...(o.workspace ? { workspace: path.resolve(o.workspace) } : {}),
        ...(o.id ? { id: o.id } : {}),
      })
      .catch((error: unknown) => {
        if (error instanceof CheckpointError) throw new CliExit(EXIT.rejected, error.message);
        throw error;
      });
    if (out.json) return void out.emit({ id: fork.id, workspace: fork.workspace, forkOf: fork.forkOf });
    const where = 'atPlanVersion' in fork.forkOf.point ? `plan version ${fork.forkOf.point.atPlanVersion}` : `after task ${fork.forkOf.point.afterTask}`;
    out.line(`${fork.id}: forked from ${id} at ${where} (plan v${fork.forkOf.planVersion}), workspace ${fork.workspace}`);
    out.line(`kept: ${fork.forkOf.kept.join(', ') || 'none'}; run again: ${fork.forkOf.rerun.join(', ') || 'none'} (follow it: keel watch ${fork.id})`);
  });
}
