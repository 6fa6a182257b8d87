// A goal's fork points (docs/fork-and-rewind.md "Goals"), for a goal started with
// `checkpoints`: the workspace as the goal found it (after setup, before planning), each plan
// version with the workspace when it was made (plan versions come at quiet points: before any
// task, or after the critic's review, when no agent runs), and each task attempt's end with
// the checkpoint its agent took (workflows/agent-checkpoint.ts). A fork (client/goal-fork.ts,
// rules in machines/goal-fork.ts) starts a new goal from one of them: its first run lays its
// workspace out from that checkpoint before setup, then its machine starts from the seed.
import { patched, proxyActivities, setHandler } from '@temporalio/workflow';
import type { CheckpointActivities } from '../activities/workspace-checkpoint';
import type { CheckpointLimits } from '../machines/checkpoint-budget';
import type { FinishedAttempt, PlanVersionPoint } from '../machines/goal-fork';
import type { GoalEvent, LogEvent, Task, Usage } from '../machines/index';
import type { PolicyConfig } from '../machines/policy';
import { bounded } from '../machines/turn-checkpoints';
import type { AgentCheckpoint, AgentCheckpointInput } from './protocol/agent';
import { goalCheckpointsQuery, type GoalCheckpointsView } from './protocol/goal-fork';
import type { ResolvedGoalOptions } from './goal-options';
import { limitsOf } from './session-checkpoints';
import { failureMessage } from './payloads';
import { routed, type WorkspaceRoute } from './workspace-host';
import type { GoalForkedEvent } from './checkpoint-events';

/** Marks goal runs that take checkpoints (the baseline, and their agents' `checkpoint` input). */
const CHECKPOINTS_PATCH = 'goal-checkpoints';
/** Marks a fork's first run (it lays its workspace out and starts from its seed). */
const FORK_PATCH = 'goal-fork';
const MAX_PLAN_VERSIONS = 100;
const MAX_FINISHED = 1000;

/** What one run hands the next. */
export interface GoalCheckpointCarry {
  baseline: GoalCheckpointsView['baseline'];
  planVersions: PlanVersionPoint[];
  finished: FinishedAttempt[];
  latest: string | null;
  usedBytes: number;
}

export interface GoalCheckpointsHost {
  options: ResolvedGoalOptions;
  route: () => WorkspaceRoute | null;
  storeId: () => string | undefined;
  policy: () => PolicyConfig | null;
  tasks: () => readonly Task[];
  now: () => number;
  post: (work: () => void) => void;
  publish: (event: GoalForkedEvent) => void;
}

/** A fork point in words (the plan's log says where a fork came from). */
export const describePoint = (goalId: string, point: { atPlanVersion: number } | { afterTask: string }): string =>
  'atPlanVersion' in point ? `forked from goal ${goalId} at plan version ${point.atPlanVersion}` : `forked from goal ${goalId} after task ${point.afterTask}`;

export class GoalCheckpoints {
  readonly enabled: boolean;
  private readonly limits: CheckpointLimits;
  private baselinePoint: GoalCheckpointsView['baseline'];
  private planVersions: PlanVersionPoint[];
  private finished: FinishedAttempt[];
  private latest: string | null;
  private usedBytes: number;

  constructor(
    private readonly host: GoalCheckpointsHost,
    carry: GoalCheckpointCarry | undefined,
    private readonly fresh: boolean,
  ) {
    const option = host.options.checkpoints;
    this.enabled = option !== undefined && option !== false;
    this.limits = limitsOf(option);
    this.baselinePoint = carry?.baseline ?? null;
    this.planVersions = carry?.planVersions ?? [];
    this.finished = carry?.finished ?? [];
    this.latest = carry?.latest ?? host.options.forkOf?.manifest ?? null;
    this.usedBytes = carry?.usedBytes ?? 0;
    // Registered for every goal: one started without checkpoints says so (and a fork of it is refused by name).
    setHandler(goalCheckpointsQuery, () => this.view());
  }

  carry(): GoalCheckpointCarry | undefined {
    return this.enabled ? { baseline: this.baselinePoint, planVersions: this.planVersions, finished: this.finished, latest: this.latest, usedBytes: this.usedBytes } : undefined;
  }

  private activities() {
    return proxyActivities<CheckpointActivities>({ startToCloseTimeout: '30 minutes', heartbeatTimeout: '60 seconds', retry: { maximumAttempts: 3 }, ...routed(this.host.route()) });
  }

  /** A fork's first run lays its workspace out before setup; null when this is no fork's first run. */
  forkRestore(): Promise<void> | null {
    const forkOf = this.host.options.forkOf;
    if (!this.fresh || forkOf === undefined) return null;
    patched(FORK_PATCH);
    return this.activities()
      .restoreWorkspace({
        store: this.host.options.storeDir,
        ...(forkOf.storeId !== undefined ? { storeId: forkOf.storeId } : {}),
        workspace: this.host.options.workspace,
        manifest: forkOf.manifest,
        mode: 'fresh',
      })
      .then((r) =>
        this.host.post(() =>
          this.host.publish({ kind: 'goal.forked', fromGoal: forkOf.goalId, point: describePoint(forkOf.goalId, forkOf.point), kept: forkOf.kept.map((k) => k.taskId), written: r.written, skipped: r.skipped }),
        ),
      );
  }

  /** The machine's first event for a fork: its plan and the tasks it keeps. */
  forkedEvent(): Extract<GoalEvent, { type: 'forked' }> | null {
    const forkOf = this.host.options.forkOf;
    if (forkOf === undefined) return null;
    return { type: 'forked', tasks: forkOf.tasks, kept: forkOf.kept, planVersion: forkOf.planVersion, from: describePoint(forkOf.goalId, forkOf.point) + (forkOf.changed ? ', with a changed plan' : '') };
  }

  /** The workspace as the goal found it, before any plan (not for a fork: it starts from its fork point). `done` runs either way. */
  baseline(done: () => void): void {
    if (!this.enabled || !this.fresh || this.host.options.forkOf !== undefined) return done();
    patched(CHECKPOINTS_PATCH);
    const storeId = this.host.storeId();
    const at = new Date(this.host.now()).toISOString();
    this.activities()
      .checkpointWorkspace({
        store: this.host.options.storeDir,
        ...(storeId !== undefined ? { storeId } : {}),
        workspace: this.host.options.workspace,
        previous: null,
        conversation: { head: null, append: [] },
        limits: this.limits,
        usedBytes: this.usedBytes,
      })
      .then(
        (r) =>
          this.host.post(() => {
            this.usedBytes += r.storedBytes;
            this.latest = r.manifest;
            this.baselinePoint = { manifest: r.manifest, at, error: null };
          }),
        (error: unknown) => this.host.post(() => (this.baselinePoint = { manifest: null, at, error: failureMessage(error) })),
      )
      .finally(() => this.host.post(done));
  }

  /** What a task agent is started with: checkpoint its workspace when it ends. */
  agentInput(): { checkpoint: AgentCheckpointInput } | Record<string, never> {
    if (!this.enabled) return {};
    return { checkpoint: { previous: this.latest, limits: this.limits, usedBytes: this.usedBytes } };
  }

  /** The goal's log passes here: each plan version is recorded with the workspace then. */
  tap(event: { kind: string }): void {
    if (!this.enabled || (event.kind !== 'plan.created' && event.kind !== 'plan.updated')) return;
    const e = event as Extract<LogEvent, { kind: 'plan.created' | 'plan.updated' }>;
    const error = this.latest === null ? (this.finished.at(-1)?.error ?? this.baselinePoint?.error ?? 'no checkpoint was taken') : null;
    const point: PlanVersionPoint = { version: e.planVersion, at: new Date(this.host.now()).toISOString(), tasks: JSON.parse(JSON.stringify(e.tasks)) as Task[], manifest: this.latest, error, finished: this.finished.at(-1)?.seq ?? 0 };
    this.planVersions = bounded([...this.planVersions.filter((v) => v.version !== e.planVersion), point], MAX_PLAN_VERSIONS);
  }

  /** A task attempt ended with its agent's result (and checkpoint). */
  attemptEnded(a: { taskId: string; attempt: number; agentId: string; outcome: 'succeeded' | 'failed'; planVersion: number; result: string; evidence: string[]; usage: Usage; checkpoint: AgentCheckpoint | undefined }): void {
    if (!this.enabled) return;
    const c = a.checkpoint;
    if (c?.manifest != null) this.latest = c.manifest;
    this.usedBytes += c?.storedBytes ?? 0;
    const seq = (this.finished.at(-1)?.seq ?? 0) + 1;
    this.finished = bounded(
      [
        ...this.finished,
        {
          seq,
          taskId: a.taskId,
          attempt: a.attempt,
          agentId: a.agentId,
          outcome: a.outcome,
          planVersion: a.planVersion,
          at: new Date(this.host.now()).toISOString(),
          result: a.result,
          evidence: a.evidence,
          usage: a.usage,
          manifest: c?.manifest ?? null,
          changed: c?.changed ?? 0,
          removed: c?.removed ?? 0,
          skipped: c?.skipped ?? [],
          error: c === undefined ? 'the agent took no checkpoint' : c.error,
        },
      ],
      MAX_FINISHED,
    );
  }

  view(): GoalCheckpointsView {
    const { forkOf, ...options } = this.host.options;
    return {
      enabled: this.enabled,
      baseline: this.baselinePoint,
      planVersions: this.planVersions,
      finished: this.finished,
      tasks: [...this.host.tasks()],
      maxTasks: this.host.options.maxTasks,
      usedBytes: this.usedBytes,
      maxBytes: this.limits.maxBytes,
      forkOf: forkOf === undefined ? null : { goalId: forkOf.goalId, point: forkOf.point, fromPlanVersion: forkOf.fromPlanVersion, kept: forkOf.kept.map((k) => k.taskId) },
      base: { options, policy: this.host.policy(), storeId: this.host.storeId() ?? null },
    };
  }
}
