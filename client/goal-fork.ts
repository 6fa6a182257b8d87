// Goal fork (docs/fork-and-rewind.md "Goals"): a new goal from a plan version or a finished
// task of its parent, with the parent's plan there or a changed one. The client reads the
// parent's fork points (the `goalCheckpoints` query), lets the rules pick the point, the
// kept tasks and check the plan (machines/goal-fork.ts), and starts the fork with the
// parent's options and effective policy and the seed; the fork's workflow lays its workspace
// out from the point's checkpoint and starts from the seed (workflows/goal-checkpoints.ts).
// The parent is not touched.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { planGoalFork, type GoalForkPoint } from '../machines/goal-fork';
import { goalCheckpointsQuery, goalForkRequestSchema, type GoalCheckpointsView, type GoalForkOf, type GoalForkRequest } from '../workflows/protocol/goal-fork';
import { goalOptionsSchema, planQuery, type GoalOptions } from '../workflows/protocol/goal';
import { goalWorkflow } from '../workflows/goal';
import { code, escapeMarkdown } from '../workflows/markdown';
import { describeIssues } from '../workflows/payloads';
import { stampedMemo, startSearchAttributes } from '../workflows/run-format';
import { CheckpointError } from './checkpoints';
import { queryOnce } from './closed-run-answers';
import { InvalidInputError, mapErrors } from './errors';
import { forkWorkspacePath } from './workspace';
import { GoalHandle } from './goal-handle';

export interface GoalForkResult {
  goal: GoalHandle;
  id: string;
  workspace: string;
  forkOf: { goalId: string; point: GoalForkPoint; planVersion: number; kept: string[]; rerun: string[] };
}

/** A goal's fork points; a goal started without checkpoints (or before goals had them) says so. */
export async function readGoalCheckpoints(client: Client, id: string): Promise<GoalCheckpointsView> {
  try {
    return await mapErrors(id, 'goalCheckpoints', () => queryOnce(client, id, goalCheckpointsQuery));
  } catch (error) {
    if (/goalCheckpoints/.test((error as Error).message) && /(unknown|not registered|did not register|handler)/i.test((error as Error).message)) {
      throw new CheckpointError(id, 'checkpoints_off', "this goal keeps no checkpoints, so its task agents' files cannot be restored (start it with checkpoints: true)");
    }
    throw error;
  }
}

export async function forkGoal(client: Client, taskQueue: string, parentId: string, request: GoalForkRequest): Promise<GoalForkResult> {
  const parsed = goalForkRequestSchema.safeParse(request);
  if (!parsed.success) throw new InvalidInputError('forkGoal', describeIssues(parsed.error.issues));
  const r = parsed.data;
  if (r.workspace !== undefined && !path.isAbsolute(r.workspace)) throw new InvalidInputError('forkGoal', ['workspace: must be an absolute path']);
  const point: GoalForkPoint = r.atPlanVersion !== undefined ? { atPlanVersion: r.atPlanVersion } : { afterTask: r.afterTask! };
  const view = await readGoalCheckpoints(client, parentId);
  const planned = planGoalFork(view, point, r.plan);
  if (!planned.ok) throw new CheckpointError(parentId, planned.code, planned.message);
  const seed = planned.seed;
  // What the kept tasks' agents reported in detail (files, commands): the fork's plan shows it as the parent's did.
  const evidence = (await mapErrors(parentId, 'plan', () => queryOnce(client, parentId, planQuery))).evidence;
  const details = Object.fromEntries(seed.kept.flatMap((k) => (evidence[k.taskId] !== undefined ? [[k.taskId, evidence[k.taskId]!]] : [])));
  const tag = 'atPlanVersion' in point ? `plan${point.atPlanVersion}` : `after-${point.afterTask}`;
  const id = r.id ?? `${parentId}-fork-${randomUUID().slice(0, 8)}`;
  const { schedule: _schedule, ...parentOptions } = view.base.options as GoalOptions & { storeDir: string };
  const workspace = r.workspace !== undefined ? await forkWorkspacePath(r.workspace) : path.join(path.dirname(parentOptions.workspace), `${path.basename(parentOptions.workspace)}.fork-${id.slice(-8)}`);
  const forkOf: GoalForkOf = {
    goalId: parentId,
    point,
    fromPlanVersion: seed.fromPlanVersion,
    planVersion: seed.planVersion,
    tasks: seed.tasks,
    kept: seed.kept,
    ...(Object.keys(details).length > 0 ? { details } : {}),
    manifest: seed.manifest,
    changed: seed.changed,
    ...(view.base.storeId !== null ? { storeId: view.base.storeId } : {}),
  };
  const args: GoalOptions = {
    ...parentOptions,
    workspace,
    // The parent's store holds the files (by default it is in the parent's workspace).
    storeDir: parentOptions.storeDir,
    // The parent's effective policy: its workspace's policy file is Keel's state, not copied.
    ...(view.base.policy !== null ? { policy: view.base.policy } : {}),
    forkOf,
  };
  const valid = goalOptionsSchema.safeParse(args);
  if (!valid.success) throw new InvalidInputError('forkGoal', describeIssues(valid.error.issues));
  const where = 'atPlanVersion' in point ? `at plan version ${point.atPlanVersion}` : `after task ${point.afterTask}`;
  await mapErrors(id, 'forkGoal', () =>
    client.workflow.start(goalWorkflow, {
      taskQueue,
      workflowId: id,
      args: [args],
      workflowIdConflictPolicy: 'FAIL',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      staticSummary: `goal in ${code(workspace)}, forked from ${code(parentId)} ${where}`,
      memo: stampedMemo({ keelSummary: oneLine(args.goal, 180), keelForkOf: `${parentId}@${tag}` }),
      typedSearchAttributes: startSearchAttributes('goal', workspace),
      staticDetails: `Keel goal in ${code(workspace)}, forked from ${code(parentId)} ${where}\n\n${escapeMarkdown(args.goal)}`,
    }),
  );
  const kept = seed.kept.map((k) => k.taskId);
  return { goal: new GoalHandle(client, id), id, workspace, forkOf: { goalId: parentId, point, planVersion: seed.planVersion, kept, rerun: seed.tasks.map((t) => t.id).filter((t) => !kept.includes(t)) } };
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
